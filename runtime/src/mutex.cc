// Mutex: Drepper's three-state lock word, with the futex replaced by a user-level wait queue.
#include "arbrt/sync.h"
#include "arch.h"

namespace arbrt {

using detail::Waiter;

namespace {
// Short optimistic spin before queueing: pays off when the holder runs on another core and is about
// to unlock; bounded so a holder on our own core (which cannot run while we spin) costs little.
constexpr int kSpinIterations = 64;
}  // namespace

void Mutex::lock() {
    uint32_t expected = 0;
    if (state_.compare_exchange_strong(expected, 1, std::memory_order_acquire)) return;
    lockSlow(detail::kNoDeadline);
}

bool Mutex::tryLock() {
    uint32_t expected = 0;
    return state_.compare_exchange_strong(expected, 1, std::memory_order_acquire);
}

bool Mutex::lockUntil(uint64_t deadlineNs) {
    uint32_t expected = 0;
    if (state_.compare_exchange_strong(expected, 1, std::memory_order_acquire)) return true;
    return lockSlow(deadlineNs);
}

bool Mutex::lockSlow(uint64_t deadlineNs) {
    for (int i = 0; i < kSpinIterations; ++i) {
        uint32_t expected = 0;
        if (state_.load(std::memory_order_relaxed) == 0 &&
            state_.compare_exchange_weak(expected, 1, std::memory_order_acquire)) {
            return true;
        }
        detail::cpuRelax();
    }
    for (;;) {
        Waiter w;
        detail::initWaiter(&w);
        waiters_.lock.lock();
        // Mark "maybe waiters" and take the lock if it was free. Under the queue lock, so an
        // unlocker that saw 2 cannot look at the queue before we are in it.
        if (state_.exchange(2, std::memory_order_acquire) == 0) {
            waiters_.lock.unlock();
            return true;
        }
        waiters_.pushBack(&w);
        waiters_.lock.unlock();
        if (!detail::waitOn(waiters_, &w, deadlineNs)) return false;
    }
}

void Mutex::unlock() {
    if (state_.exchange(0, std::memory_order_release) == 2) unlockSlow();
}

void Mutex::unlockSlow() {
    waiters_.lock.lock();
    Waiter* w = waiters_.popFront();
    detail::WakeToken token{};
    if (w) token = detail::claimWake(w);
    waiters_.lock.unlock();
    if (w) detail::deliverWake(token);
}

}  // namespace arbrt
