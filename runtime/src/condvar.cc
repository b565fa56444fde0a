// Condition variable: waiters queue before releasing the mutex, so a notify after the unlock cannot
// be missed; a timed-out waiter unlinks itself (waitOn), leaving no stale entry.
#include "arbrt/sync.h"
#include "arbrt/time.h"

namespace arbrt {

void CondVar::wait(Mutex& mutex) {
    waitUntil(mutex, detail::kNoDeadline);
}

bool CondVar::waitUntil(Mutex& mutex, uint64_t deadlineNs) {
    detail::Waiter w;
    detail::initWaiter(&w);
    waiters_.lock.lock();
    waiters_.pushBack(&w);
    waiters_.lock.unlock();
    mutex.unlock();
    const bool woken = detail::waitOn(waiters_, &w, deadlineNs);
    mutex.lock();
    return woken;
}

bool CondVar::waitFor(Mutex& mutex, uint64_t timeoutNs) {
    const uint64_t now = nowNs();
    const uint64_t deadline =
        timeoutNs > detail::kNoDeadline - 1 - now ? detail::kNoDeadline - 1 : now + timeoutNs;
    return waitUntil(mutex, deadline);
}

bool CondVar::waitUntil(Mutex& mutex, clockid_t clock, const timespec& deadline) {
    uint64_t deadlineNs;
    if (!deadlineToNs(clock, deadline, &deadlineNs)) return false;
    return waitUntil(mutex, deadlineNs);
}

void CondVar::notifyOne() {
    if (__atomic_load_n(&waiters_.head, __ATOMIC_RELAXED) == nullptr) {
        // Racy peek is safe: a waiter queues before unlocking the mutex the notifier must hold (or
        // have held) to change the predicate, so a waiter that matters is already visible.
        std::atomic_thread_fence(std::memory_order_seq_cst);
        if (__atomic_load_n(&waiters_.head, __ATOMIC_RELAXED) == nullptr) return;
    }
    detail::wakeSome(waiters_, 1);
}

void CondVar::notifyAll() {
    waiters_.lock.lock();
    const size_t n = waiters_.count;
    waiters_.lock.unlock();
    if (n) detail::wakeSome(waiters_, n);
}

}  // namespace arbrt
