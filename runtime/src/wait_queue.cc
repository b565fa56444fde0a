// Wait queues: the one blocking mechanism every primitive is built on.
#include "arbrt/sync.h"

namespace arbrt::detail {

void WaitQueue::pushBack(Waiter* w) {
    w->next = nullptr;
    w->prev = tail;
    (tail ? tail->next : head) = w;
    tail = w;
    ++count;
}

void WaitQueue::remove(Waiter* w) {
    (w->prev ? w->prev->next : head) = w->next;
    (w->next ? w->next->prev : tail) = w->prev;
    w->next = w->prev = nullptr;
    --count;
}

Waiter* WaitQueue::popFront() {
    Waiter* w = head;
    if (w) remove(w);
    return w;
}

size_t wakeSome(WaitQueue& queue, size_t limit) {
    constexpr size_t kBatch = 32;
    size_t woken = 0;
    while (woken < limit) {
        WakeToken tokens[kBatch];
        size_t n = 0;
        queue.lock.lock();
        while (n < kBatch && woken + n < limit) {
            Waiter* w = queue.popFront();
            if (!w) break;
            tokens[n++] = claimWake(w);
        }
        const bool more = !queue.empty();
        queue.lock.unlock();
        for (size_t i = 0; i < n; ++i) deliverWake(tokens[i]);
        woken += n;
        if (n < kBatch || !more) break;
    }
    return woken;
}

bool waitOn(WaitQueue& queue, Waiter* w, uint64_t deadlineNs) {
    if (parkUntilWoken(w, deadlineNs)) return true;
    // Timed out. Wakers pop waiters under the queue lock, so under it the waiter is either still
    // queued (remove it: no stale entry) or already popped (then its wake-up is committed: wait for
    // it).
    queue.lock.lock();
    if (w->state.load(std::memory_order_acquire) == Waiter::kWaiting) {
        queue.remove(w);
        w->state.store(Waiter::kTimedOut, std::memory_order_relaxed);
        queue.lock.unlock();
        return false;
    }
    queue.lock.unlock();
    parkUntilWoken(w, kNoDeadline);
    return true;
}

}  // namespace arbrt::detail
