// The runtime's one internal lock: a spinlock for short critical sections (queue links, a heap
// update), bounded so that a descheduled holder costs a sleep, not a time slice of spinning.
//
// Why not a plain test-and-set loop: where carriers share CPUs (standalone mode, the affinity and
// fake backends, any loaded host) the holder may be preempted by the kernel; spinners would then
// burn their whole time slice. So a waiter spins with exponential backoff for about a microsecond
// (the common case: the holder runs elsewhere and is a few instructions from unlocking), then
// yields the CPU a few times (the holder may be waiting for this very CPU), then sleeps on a futex
// until the holder unlocks — the lock word's third state tells unlock() that someone sleeps.
//
// Why not a kernel mutex (pthread_mutex_t): under the preload library it would be the library's
// own user-level mutex, and the runtime must never wait on what it implements.
//
// Lock ranks (Go's lockrank): every lock has a rank, and a thread may only take a lock of a higher
// rank than any it holds (or, for ranks that allow it, the same rank in address order: two
// parking-lot buckets). Checked in builds with ARBRUN_CHECK_INVARIANTS; the order itself is the
// table in kLockRanks, the one place to read it. A lock waited on for over a second prints one
// line naming the lock ("deadlock?"), in every build: that wait is already slow.
#pragma once

#include <atomic>
#include <cstdint>

#include "arbrt/embed/invariant.h"

namespace arbrt::detail {

// Acquisition order, lowest first. Unranked locks take part in no checks (leaf locks of the preload
// library whose order nothing else depends on).
enum class LockRank : uint8_t {
    unranked = 0,
    coreRelease,  // RuntimeState::releaseLock: one core release at a time
    waitQueue,    // a WaitQueue's lock: a primitive's waiters or a parking-lot bucket (a waiter
                  // may be made runnable under it: run queues rank above)
    corePolicy,   // CorePolicy::lock_: exclusive/batch reservations
    spare,        // RuntimeState::spareLock: spare carriers
    pending,      // RuntimeState::pendingLock: runnable threads while no core is active
    runQueue,     // Core::queueLock
    timerHeap,    // Core::timerLock (two at once only while migrating, in address order)
    poller,       // the readiness poller's per-descriptor buckets
    staticTls,    // glibc_tcb.cc: the static TLS image (a rescan walks the pooled contexts)
    contextPool,  // context_pool.cc: the shared pool of free contexts
    trace,        // the core timeline file: a leaf
    count,
};

// Name (for the "deadlock?" line and rank violations) and when two locks of the rank may be held
// at once: in address order (two parking-lot buckets), or in any order while a lock of the rank
// `nestsUnder` is held, which admits one such nesting at a time (timer migration under the core
// release lock).
struct LockRankInfo {
    const char* name;
    bool nestsInAddressOrder;
    LockRank nestsUnder;  // unranked: no such rule
};
// clang-format off
inline constexpr LockRankInfo kLockRanks[] = {
    {"unranked",        true,  LockRank::unranked},
    {"core release",    false, LockRank::unranked},
    {"wait queue",      true,  LockRank::unranked},
    {"core policy",     false, LockRank::unranked},
    {"spare carriers",  false, LockRank::unranked},
    {"pending threads", false, LockRank::unranked},
    {"run queue",       true,  LockRank::unranked},
    {"timer heap",      true,  LockRank::coreRelease},
    {"poller bucket",   false, LockRank::unranked},
    {"static TLS",      false, LockRank::unranked},
    {"context pool",    false, LockRank::unranked},
    {"trace",           false, LockRank::unranked},
};
// clang-format on
static_assert(sizeof(kLockRanks) / sizeof(kLockRanks[0]) == size_t(LockRank::count));

// Four bytes: the rank lives in the lock word's second byte, beside the state in the first, so a
// lock costs no more room than a bare futex word (Core keeps its run queue and lock in one line).
class SpinLock {
  public:
    constexpr SpinLock() = default;
    constexpr explicit SpinLock(LockRank rank) : word_(uint32_t(rank) << 8) {}
    SpinLock(const SpinLock&) = delete;
    SpinLock& operator=(const SpinLock&) = delete;

    // Acquire: the critical section's reads see what the previous holder wrote before unlock().
    void lock() {
        if (!tryAcquire()) [[unlikely]]
            lockSlow();
        if constexpr (kCheckInvariants) noteAcquired();
    }
    bool tryLock() {
        const bool got = tryAcquire();
        if constexpr (kCheckInvariants) {
            if (got) noteAcquired();
        }
        return got;
    }
    // Release: publishes the critical section; wakes one sleeper if any went to sleep.
    void unlock() {
        if constexpr (kCheckInvariants) noteReleased();
        if (word_.exchange(base() | kFree, std::memory_order_release) == (base() | kSleepers))
            [[unlikely]] {
            wakeOne();
        }
    }
    // std::lock_guard / std::unique_lock compatibility.
    bool try_lock() { return tryLock(); }
    LockRank rank() const { return LockRank((word_.load(std::memory_order_relaxed) >> 8) & 0xff); }

  private:
    enum : uint32_t { kFree = 0, kLocked = 1, kSleepers = 2, kStateMask = 0xff };
    // The rank bits, never changed after construction (relaxed: they are constant).
    uint32_t base() const { return word_.load(std::memory_order_relaxed) & ~kStateMask; }
    // One attempt: free -> locked. Acquire pairs with the previous holder's release in unlock().
    bool tryAcquire() {
        uint32_t expected = base() | kFree;
        return word_.compare_exchange_strong(expected, expected | kLocked,
                                             std::memory_order_acquire, std::memory_order_relaxed);
    }
    void lockSlow();
    void wakeOne();
    void noteAcquired();
    void noteReleased();

    // A futex word: rank << 8 | state; state kSleepers only once a waiter went to sleep.
    std::atomic<uint32_t> word_{0};
};
static_assert(sizeof(SpinLock) == 4);

// Checked builds: how many ranked locks the calling thread holds (always 0 otherwise). A user
// thread must hold none when it switches out: a lock held across the switch would stall (or, on
// one core, deadlock) every thread that wants it until the holder runs again.
int rankedLocksHeld();

}  // namespace arbrt::detail

namespace arbrt::embed {
// The same lock for the embedding layer's own short critical sections.
using detail::LockRank;
using detail::SpinLock;
}  // namespace arbrt::embed
