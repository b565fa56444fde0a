// Barrier and counting semaphore.
#include "arbrt/sync.h"

namespace arbrt {

bool Barrier::wait() {
    waiters_.lock.lock();
    if (++arrived_ == count_) {
        // The count_-1 waiters of this cycle are the first in the FIFO: later arrivals belong to
        // the next cycle and are queued behind them, so waking exactly that many is exact.
        const size_t toWake = arrived_ - 1;
        arrived_ = 0;
        ++cycle_;
        waiters_.lock.unlock();
        detail::wakeSome(waiters_, toWake);
        return true;
    }
    detail::Waiter w;
    detail::initWaiter(&w);
    waiters_.pushBack(&w);
    waiters_.lock.unlock();
    detail::waitOn(waiters_, &w, detail::kNoDeadline);
    return false;
}

bool Semaphore::tryWait() {
    unsigned v = value_.load(std::memory_order_relaxed);
    while (v > 0) {
        if (value_.compare_exchange_weak(v, v - 1, std::memory_order_acquire)) return true;
    }
    return false;
}

void Semaphore::wait() {
    waitUntil(detail::kNoDeadline);
}

bool Semaphore::waitUntil(uint64_t deadlineNs) {
    for (;;) {
        if (tryWait()) return true;
        detail::Waiter w;
        detail::initWaiter(&w);
        waiters_.lock.lock();
        // Queue first, then re-check (Dekker with post(): it stores the value, fences, then looks
        // for waiters; we store ourselves, fence, then look at the value), so one side always sees
        // the other.
        waiters_.pushBack(&w);
        std::atomic_thread_fence(std::memory_order_seq_cst);
        if (tryWait()) {
            waiters_.remove(&w);
            waiters_.lock.unlock();
            return true;
        }
        waiters_.lock.unlock();
        if (!detail::waitOn(waiters_, &w, deadlineNs)) return false;
    }
}

void Semaphore::post() {
    value_.fetch_add(1, std::memory_order_release);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (__atomic_load_n(&waiters_.head, __ATOMIC_RELAXED) == nullptr) return;
    detail::wakeSome(waiters_, 1);
}

}  // namespace arbrt
