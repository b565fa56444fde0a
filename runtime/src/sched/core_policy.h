// The core policy (ARCHITECTURE.md, "core policy"): which cores each thread class may use, the
// reservations of exclusive threads, and the class counts the arbiter request is computed from
// (core_request.h). Its decisions are taken on rare paths (creating or reclassifying a thread of
// a class other than normal, a core granted or lost, an exclusive or batch thread exiting); the
// hot paths only read their outcome (Core::reservedFor, ThreadContext::queueClass, allowed).
//
// The rules, and where they are enforced:
//   normal     any active core not reserved for another thread: placed by power of two choices,
//              moved by stealing and by core releases (core.cc).
//   batch      the same cores, but in each core's batch queue: a core runs a batch thread only when
//              no normal thread is runnable there (takeNext), never through runNext, and a normal
//              thread that yields keeps the core rather than hand it to a batch thread
//              (hasRunnableFor, swapWithNext, takeNextNormal); thieves take a normal thread from
//              any core before a batch thread (steal). In arbiter mode the cores only batch
//              threads need are asked for one level lower (core_request.h), so they go first.
//   exclusive  a core of its own. The policy reserves an active core (the one asked for, else an
//              idle one, not the creator's if another will do; within the thread's allowed set),
//              moves every other runnable thread off it and confines the thread there
//              (ThreadContext::reservedCore; its allowed set is untouched). From then on
//              placement, runNext, stealing and migration never put another thread there
//              (Core::reservedFor, checked under the queue lock), the core never steals and is
//              never woken to, thieves never look at it, and the thread never leaves it. A thread
//              that was running there when it was reserved leaves at its next switch. At least one
//              active core always stays shared: with no core to spare the thread runs as normal
//              (counted in exclusiveFallbacks) and tries again at its switches (one load while no
//              core can be spared). The reservation ends when the thread exits, is reclassified, or
//              the core is released (arbiter reclaim, releaseCore()); a release that would leave no
//              shared core ends another reservation instead. In arbiter mode each exclusive thread
//              adds a core to the request, and the reservation happens on a granted core.
// A class change (setThreadClass) is applied by the thread itself at its next switch, so a thread
// is never re-placed while it runs or waits in a queue.
#pragma once

#include <atomic>

#include <cstdint>
#include "arbrt/embed/spin_lock.h"

#include "arbiter/core_request.h"
#include "arbrt/sync.h"
#include "arbrt/thread.h"

namespace arbrt::detail {

struct Core;
struct ThreadContext;

// ThreadContext::placedClass: the ThreadClass values, and an exclusive thread without a core.
constexpr uint8_t kPlacedNormal = uint8_t(ThreadClass::normal);
constexpr uint8_t kPlacedExclusive = uint8_t(ThreadClass::exclusive);
constexpr uint8_t kPlacedBatch = uint8_t(ThreadClass::batch);
constexpr uint8_t kPlacedExclusiveWaiting = 3;

// One per runtime (RuntimeState::policy). Concurrency: reservations, the shared-core count and
// the class counts change under `lock_` (lock order: lock_, then a core's queueLock); every core
// activation and deactivation goes through setActive() so they stay consistent with the active
// set. The atomics are read without the lock as hints.
class CorePolicy {
  public:
    // Starts with `activeCores` cores active, none reserved.
    void reset(uint32_t activeCores);

    // A new thread of class `cls` (not normal), not yet launched: sets its queue and, for an
    // exclusive thread, reserves a core (`preferred` if it can, else never `creator`'s unless it
    // must) and confines the thread there. False when an exclusive thread got no core.
    bool placeNew(ThreadContext* t, ThreadClass cls, int preferred, const Core* creator);
    // Called by `t` itself at a switch (never its last) when t->replace is set: applies
    // t->wantedClass, preferring to reserve `here` for an exclusive thread. True when t may no
    // longer run on `here` (its reserved core is another, or `here` is reserved for another).
    bool replaceAtSwitch(ThreadContext* t, Core* here);
    // Called by `t` itself before its last switch: ends its reservation and its class count.
    void threadExiting(ThreadContext* t);
    // The forking thread in a fork child's fresh runtime: forgets the parent's reservation and
    // counts the thread's class here.
    void adoptSurvivor(ThreadContext* t);

    // Makes `core` active or inactive; returns whether it was active. Before a core goes inactive
    // its reservation ends, and if it was the last shared active core, another core's reservation
    // ends (its owner runs as normal until it can reserve again).
    bool setActive(Core* core, bool active);

    uint32_t exclusiveThreads() const { return exclusive_.load(std::memory_order_relaxed); }
    uint32_t batchThreads() const { return batch_.load(std::memory_order_relaxed); }
    uint64_t coresReserved() const { return reservations_.load(std::memory_order_relaxed); }
    uint64_t fallbacks() const { return fallbacks_.load(std::memory_order_relaxed); }

  private:
    bool applyLocked(ThreadContext* t, ThreadClass wanted, int preferred, const Core* avoid,
                     ThreadContext** evicted);
    Core* reserveLocked(ThreadContext* t, int preferred, const Core* avoid,
                        ThreadContext** evicted);
    void unreserveLocked(Core* core);
    void loseReservationLocked(Core* core);
    void countLocked(uint8_t placed, int delta);
    void unlock();

    SpinLock lock_{LockRank::corePolicy};
    bool countsChanged_ = false;  // a class count changed under lock_ (the sender is told after)
    // Active cores not reserved (under lock_; read relaxed as the "a core can be spared" hint).
    std::atomic<uint32_t> shared_{0};
    // Live threads placed exclusive (reserved or waiting) and batch (under lock_).
    std::atomic<uint32_t> exclusive_{0};
    std::atomic<uint32_t> batch_{0};
    std::atomic<uint64_t> reservations_{0};
    std::atomic<uint64_t> fallbacks_{0};
};

}  // namespace arbrt::detail
