// The runtime's wait records: Waiter records that live on the waiting thread's stack,
// and the FIFO WaitQueue the parking lot's buckets and a core's release waiters are made of. A
// waiter is woken exactly once (the `state` word decides between a wake-up and a time-out), and a
// waiter that times out unlinks itself before returning, so no stale entry is ever left behind.
// The synchronisation primitives themselves wait through the parking lot (sync_words.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "arbrt/embed/spin_lock.h"
#include "arbrt/parking_lot.h"

namespace arbrt::detail {

struct ThreadContext;

// One waiting thread. Owned by the waiter; linked into a queue only while the queue's lock is held.
struct Waiter {
    enum : uint32_t { kWaiting = 0, kWoken = 1, kTimedOut = 2 };
    Waiter* next = nullptr;
    Waiter* prev = nullptr;
    ThreadContext* thread =
        nullptr;  // the user thread, or null for a kernel thread (futex on state)
    uint32_t generation = 0;
    std::atomic<uint32_t> state{kWaiting};
    // Parking lot only: the address parked on (changed by requeue, under both buckets' locks) and
    // the FUTEX_*_BITSET mask.
    std::atomic<uintptr_t> key{0};
    uint32_t bitset = ~0u;
};

// FIFO of waiters. Concurrency: all fields are guarded by `lock`.
struct WaitQueue {
    SpinLock lock{LockRank::waitQueue};
    Waiter* head = nullptr;
    Waiter* tail = nullptr;
    size_t count = 0;

    void pushBack(Waiter* w);
    void remove(Waiter* w);
    Waiter* popFront();
    bool empty() const { return head == nullptr; }
};

// Parks the caller until `w->state` leaves kWaiting (returns true) or deadlineNs passes (returns
// false after it has won the race to kTimedOut). `queue` must hold `w` and be unlocked by the
// caller before. On time-out, the waiter is removed from `queue`.
bool waitOn(WaitQueue& queue, Waiter* w, uint64_t deadlineNs);
// Parks the caller until `w` is woken (true) or deadlineNs passes (false; `w` may still be woken
// later).
bool parkUntilWoken(Waiter* w, uint64_t deadlineNs);
// Waking is two steps so the queue lock is held only for the first: claimWake() (under the lock
// that guards the queue `w` was popped from, so a timing-out waiter sees a consistent state) marks
// `w` woken and returns what deliverWake() (after unlocking) needs; `w` itself may be gone by then.
struct WakeToken {
    ThreadContext* thread;
    uint32_t generation;
    std::atomic<uint32_t>* futexWord;  // for kernel-thread waiters
};
WakeToken claimWake(Waiter* w);
void deliverWake(const WakeToken& token);
// Both steps at once, for a waiter that is in no queue (a joiner).
void wake(Waiter* w);
// Prepares `w` for the calling thread.
void initWaiter(Waiter* w);

}  // namespace arbrt::detail
