// The condition variable's sequence protocol (sync_words.h) and arbrt::CondVar over it.
#include "arbrt/sync.h"
#include "arbrt/time.h"

namespace arbrt {
namespace words {

// Parks on the sequence's address while it still reads `observed` (checked under the bucket lock,
// which condNotify's unpark also takes after its bump). The waiter count drops only after the
// park returns, so a notify in between still unparks (harmlessly) rather than skipping a waiter.
WaitStatus condWait(CondWords c, uint32_t observed, uint64_t deadlineNs, const WaitHooks* hooks) {
    const ParkResult r = internal::parkWith(
        &c.sequence, [&] { return c.sequence.load(std::memory_order_relaxed) == observed; },
        deadlineNs, hooks);
    c.waiters.fetch_sub(1, std::memory_order_relaxed);
    if (r == ParkResult::timedOut) return WaitStatus::timedOut;
    if (r == ParkResult::interrupted) return WaitStatus::interrupted;
    return WaitStatus::ok;  // woken, or the sequence had moved already (invalid)
}

}  // namespace words

void CondVar::wait(Mutex& mutex) {
    waitUntil(mutex, kNoDeadline);
}

// The mutex is released after condBeginWait (which reads the sequence) and before parking, so a
// notify issued after our caller's predicate check, under the mutex, changes what we parked on.
bool CondVar::waitUntil(Mutex& mutex, uint64_t deadlineNs) {
    const uint32_t observed = words::condBeginWait(words());
    mutex.unlock();
    const words::WaitStatus r = words::condWait(words(), observed, deadlineNs, nullptr);
    mutex.lock();
    return r != words::WaitStatus::timedOut;
}

bool CondVar::waitFor(Mutex& mutex, uint64_t timeoutNs) {
    const uint64_t now = nowNs();
    const uint64_t deadline = timeoutNs > kNoDeadline - 1 - now ? kNoDeadline - 1 : now + timeoutNs;
    return waitUntil(mutex, deadline);
}

bool CondVar::waitUntil(Mutex& mutex, clockid_t clock, const timespec& deadline) {
    uint64_t deadlineNs;
    if (!deadlineToNs(clock, deadline, &deadlineNs)) return false;
    return waitUntil(mutex, deadlineNs);
}

void CondVar::notifyOne() {
    words::condNotify(words(), 1);
}

void CondVar::notifyAll() {
    words::condNotify(words(), ~size_t{0});
}

}  // namespace arbrt
