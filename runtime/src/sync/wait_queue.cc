// Wait queues: the parking lot's buckets and a core's release waiters (wait_queue.h).
#include "sync/wait_queue.h"

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
