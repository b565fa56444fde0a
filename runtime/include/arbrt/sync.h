// Synchronisation between user threads (and non-user kernel threads): no kernel call on the fast
// path.
//
// Every primitive keeps its waiters in a WaitQueue of Waiter records that live on the waiting
// thread's stack. A waiter is woken exactly once (the `state` word decides between a wake-up and a
// time-out), and a waiter that times out unlinks itself before returning, so no stale entry is ever
// left behind.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <ctime>

#include "arbrt/spin_lock.h"

namespace arbrt {

namespace detail {

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
    uintptr_t tag = 0;  // primitive-specific (rwlock: reader or writer)
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
// Wakes up to `limit` waiters in FIFO order, taking the queue lock in batches; returns how many.
size_t wakeSome(WaitQueue& queue, size_t limit);
// Prepares `w` for the calling thread.
void initWaiter(Waiter* w);

constexpr uint64_t kNoDeadline = ~uint64_t{0};

}  // namespace detail

class Mutex {
  public:
    void lock();
    bool tryLock();
    // Locks unless nowNs() reaches deadlineNs first (then returns false).
    bool lockUntil(uint64_t deadlineNs);
    void unlock();
    // std::lock_guard / std::unique_lock compatibility.
    bool try_lock() { return tryLock(); }

  private:
    friend class CondVar;
    bool lockSlow(uint64_t deadlineNs);
    void unlockSlow();
    // 0 free; 1 locked; 2 locked and the queue may hold waiters. Waiters re-contend after wake-up.
    std::atomic<uint32_t> state_{0};
    detail::WaitQueue waiters_;
};

class CondVar {
  public:
    void wait(Mutex& mutex);
    // Returns false on time-out (the mutex is re-locked either way).
    bool waitUntil(Mutex& mutex, uint64_t deadlineNs);
    bool waitFor(Mutex& mutex, uint64_t timeoutNs);
    // Absolute deadline on CLOCK_MONOTONIC or CLOCK_REALTIME; false on time-out or a bad clock.
    bool waitUntil(Mutex& mutex, clockid_t clock, const timespec& deadline);
    void notifyOne();
    void notifyAll();

  private:
    detail::WaitQueue waiters_;
};

// Readers-writer lock. With Preference::writers (the default) a waiting writer blocks new readers,
// so readers cannot starve writers; Preference::readers (glibc's default) lets readers in while a
// writer waits, so a thread may take the read lock recursively.
class RwLock {
  public:
    enum class Preference { writers, readers };
    explicit RwLock(Preference preference = Preference::writers)
        : preferReaders_(preference == Preference::readers) {}
    void lockShared();
    bool tryLockShared();
    bool lockSharedUntil(uint64_t deadlineNs);
    void unlockShared();
    void lock();
    bool tryLock();
    bool lockUntil(uint64_t deadlineNs);
    void unlock();

  private:
    bool acquire(bool writer, uint64_t deadlineNs);
    bool canAcquire(bool writer) const;
    void wakeEligible();
    // Guarded by waiters_.lock.
    detail::WaitQueue waiters_;
    int readers_ = 0;
    bool writer_ = false;
    int waitingWriters_ = 0;
    bool preferReaders_;
};

class Barrier {
  public:
    explicit Barrier(unsigned count) : count_(count) {}
    // Blocks until `count` threads have called wait(); returns true in exactly one of them per
    // cycle.
    bool wait();

  private:
    detail::WaitQueue waiters_;  // lock also guards arrived_ and cycle_
    unsigned count_;
    unsigned arrived_ = 0;
    uint64_t cycle_ = 0;
};

class Semaphore {
  public:
    explicit Semaphore(unsigned initial = 0) : value_(initial) {}
    void wait();
    bool tryWait();
    bool waitUntil(uint64_t deadlineNs);
    void post();
    unsigned value() const { return value_.load(std::memory_order_relaxed); }

  private:
    std::atomic<unsigned> value_;
    detail::WaitQueue waiters_;
};

}  // namespace arbrt
