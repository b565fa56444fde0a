// The core policy: class placement and exclusive reservations (the rules are in core_policy.h).
#include "sched/core_policy.h"
#include <atomic>

#include "arbiter/request_sender.h"
#include "platform/arch.h"
#include "sched/runtime_state.h"

namespace arbrt::detail {
namespace {

// Exclusive threads count as such for the request whether or not they hold a core.
bool isExclusive(uint8_t placed) {
    return placed == kPlacedExclusive || placed == kPlacedExclusiveWaiting;
}

// Runnable threads moved off a core that was just reserved: queued again where they may run
// (outside the policy's lock, since placing them may wake carriers). A yield on that core may
// have queued one just before switching out of it: as a thief does, wait until its registers are
// saved before another core may resume it.
void placeEvicted(ThreadContext* list) {
    while (list) {
        ThreadContext* t = list;
        list = t->nextRunnable;
        while (t->switching.load(std::memory_order_acquire)) cpuRelax();
        t->core = placeThread(t, -1);
        enqueue(t, Wake::requeue);
    }
}

// reservedCoreOf() reads the field from any thread: stored atomically (the policy's lock orders
// the writers).
void setReservedCore(ThreadContext* t, Core* core) {
    std::atomic_ref(t->reservedCore).store(core, std::memory_order_release);
}

}  // namespace

// Before any carrier runs (start-up, a fork child's rebuild): relaxed stores suffice.
void CorePolicy::reset(uint32_t activeCores) {
    shared_.store(activeCores, std::memory_order_relaxed);
    exclusive_.store(0, std::memory_order_relaxed);
    batch_.store(0, std::memory_order_relaxed);
}

// Adds `delta` to the count of `placed`'s class (only exclusive and batch threads are counted;
// normal ones are the live threads that are neither); the request sender hears of it at unlock().
void CorePolicy::countLocked(uint8_t placed, int delta) {
    std::atomic<uint32_t>* count = isExclusive(placed)      ? &exclusive_
                                   : placed == kPlacedBatch ? &batch_
                                                            : nullptr;
    if (!count) return;
    count->store(count->load(std::memory_order_relaxed) + uint32_t(delta),
                 std::memory_order_relaxed);
    countsChanged_ = true;
}

// Releases lock_, then wakes the request sender if a count changed: no futex call under the lock.
void CorePolicy::unlock() {
    const bool changed = countsChanged_;
    countsChanged_ = false;
    lock_.unlock();
    if (changed) requestChanged();
}

// Picks the core to reserve: `preferred` if it qualifies, else the best by (not `avoid`, asleep,
// shortest queue). Qualifies: active, not reserved, allowed for t. Needs two shared cores (one
// stays shared). Reads each core's queue line once, and sleeping's line.
Core* CorePolicy::reserveLocked(ThreadContext* t, int preferred, const Core* avoid,
                                ThreadContext** evicted) {
    RuntimeState& rt = *gRuntime;
    if (shared_.load(std::memory_order_relaxed) < 2) return nullptr;
    Core* best = nullptr;
    uint64_t bestScore = ~uint64_t{0};
    for (int i = 0; i < rt.numCores; ++i) {
        Core* c = &rt.cores[i];
        if (!c->active.load(std::memory_order_relaxed) ||
            c->reservedFor.load(std::memory_order_relaxed) || !t->allowed.test(size_t(i))) {
            continue;
        }
        uint64_t score = 0;
        if (i != preferred) {
            score = uint64_t(c == avoid) << 40 |
                    uint64_t(c->sleeping.load(std::memory_order_relaxed) == 0) << 39 |
                    uint64_t(c->queued.load(std::memory_order_relaxed)) << 8 | uint64_t(i);
            score += 1;  // below any `preferred`
        }
        if (score < bestScore) best = c, bestScore = score;
    }
    if (!best) return nullptr;
    best->queueLock.lock();
    best->reservedFor.store(t, std::memory_order_seq_cst);
    ThreadContext* list = takeAllRunnableLocked(best);
    best->queueLock.unlock();
    // A thread running there now leaves at its next switch; its `replace` flag makes even a yield
    // with nothing else runnable a switch (replaceAtSwitch sends it away). A snapshot of the
    // carrier's current thread: a stale one only gets a harmless extra look at its placement.
    if (const Carrier* runner = best->carrier.load(std::memory_order_acquire)) {
        ThreadContext* running = std::atomic_ref(runner->current).load(std::memory_order_acquire);
        if (running && running != t) running->replace.store(1, std::memory_order_release);
    }
    // The evicted threads, in order (t is not among them: it runs, or is not launched yet).
    ThreadContext** link = evicted;
    while (*link) link = &(*link)->nextRunnable;
    for (ThreadContext* next; list; list = next) {
        next = list->nextRunnable;
        list->nextRunnable = nullptr;
        *link = list;
        link = &list->nextRunnable;
    }
    shared_.store(shared_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
    reservations_.fetch_add(1, std::memory_order_relaxed);
    setReservedCore(t, best);
    return best;
}

// The core takes any thread again. reservedFor changes under the queue lock, so a push that saw
// the reservation has finished before it ends, and one that starts later sees it gone.
void CorePolicy::unreserveLocked(Core* core) {
    ThreadContext* owner = core->reservedFor.load(std::memory_order_relaxed);
    core->queueLock.lock();
    core->reservedFor.store(nullptr, std::memory_order_relaxed);
    core->queueLock.unlock();
    shared_.store(shared_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (owner) setReservedCore(owner, nullptr);
}

// The core's owner loses it while it may be running, queued or parked anywhere: it keeps its
// allowed set until its next switch, where it re-places itself (`replace`).
void CorePolicy::loseReservationLocked(Core* core) {
    ThreadContext* owner = core->reservedFor.load(std::memory_order_relaxed);
    unreserveLocked(core);
    if (!owner) return;
    owner->placedClass = kPlacedExclusiveWaiting;
    fallbacks_.fetch_add(1, std::memory_order_relaxed);
    owner->replace.store(1, std::memory_order_release);
}

// Moves t from its placed class to `wanted`. t is not running elsewhere: it is the caller, or
// not launched yet. False when an exclusive thread got no core (it then runs as normal and
// `replace` stays set, so it tries again at its switches).
bool CorePolicy::applyLocked(ThreadContext* t, ThreadClass wanted, int preferred, const Core* avoid,
                             ThreadContext** evicted) {
    const uint8_t old = t->placedClass;
    const uint8_t target = uint8_t(wanted);
    if (t->reservedCore && wanted != ThreadClass::exclusive) unreserveLocked(t->reservedCore);
    if (isExclusive(old) != isExclusive(target) ||
        (old == kPlacedBatch) != (target == kPlacedBatch)) {
        countLocked(old, -1);
        countLocked(target, +1);
    }
    t->queueClass = wanted == ThreadClass::batch ? kBatchQueue : kNormalQueue;
    if (wanted != ThreadClass::exclusive || t->reservedCore ||
        reserveLocked(t, preferred, avoid, evicted)) {
        t->placedClass = target;
        return true;
    }
    if (old != kPlacedExclusiveWaiting) fallbacks_.fetch_add(1, std::memory_order_relaxed);
    t->placedClass = kPlacedExclusiveWaiting;
    t->replace.store(1, std::memory_order_relaxed);
    return false;
}

// t is not launched: its fields are the creator's to write; launching it publishes them.
bool CorePolicy::placeNew(ThreadContext* t, ThreadClass cls, int preferred, const Core* creator) {
    t->wantedClass.store(uint8_t(cls), std::memory_order_relaxed);
    ThreadContext* evicted = nullptr;
    lock_.lock();
    const bool placed = applyLocked(t, cls, preferred, creator, &evicted);
    unlock();
    placeEvicted(evicted);
    return placed;
}

// The exchange (acquire) pairs with setThreadClass()'s release store: the class read after it is
// at least the one whose change set the flag. While an exclusive thread waits and no core can be
// spared, this is one load. True also for a thread left running on a core reserved for another.
bool CorePolicy::replaceAtSwitch(ThreadContext* t, Core* here) {
    t->replace.exchange(0, std::memory_order_acquire);
    const auto wanted = ThreadClass(t->wantedClass.load(std::memory_order_relaxed));
    if (wanted == ThreadClass::exclusive && t->placedClass == kPlacedExclusiveWaiting &&
        shared_.load(std::memory_order_relaxed) < 2) {
        t->replace.store(1, std::memory_order_relaxed);  // still no core to spare
    } else {
        ThreadContext* evicted = nullptr;
        lock_.lock();
        applyLocked(t, wanted, here->id, nullptr, &evicted);
        unlock();
        placeEvicted(evicted);
    }
    const ThreadContext* owner = here->reservedFor.load(std::memory_order_relaxed);
    if (owner && owner != t) {  // it was running here when another thread reserved the core
        t->core = nullptr;      // placed anew when it becomes runnable
        return true;
    }
    if (!t->reservedCore || t->reservedCore == here) return false;
    t->core = t->reservedCore;
    return true;
}

// On the exiting thread: its core is shared again before it switches away for the last time.
void CorePolicy::threadExiting(ThreadContext* t) {
    lock_.lock();
    if (t->reservedCore) unreserveLocked(t->reservedCore);
    countLocked(t->placedClass, -1);
    t->placedClass = kPlacedNormal;
    unlock();
}

// The child has one thread: only the lock's ordering with later class changes matters.
void CorePolicy::adoptSurvivor(ThreadContext* t) {
    lock_.lock();
    setReservedCore(t, nullptr);
    if (isExclusive(t->placedClass)) {
        t->placedClass = kPlacedExclusiveWaiting;
        t->replace.store(1, std::memory_order_relaxed);
    }
    countLocked(t->placedClass, +1);
    unlock();
}

// `active` changes under the queue lock (as before the policy existed): a push either sees the
// core active and queues there, or sees it inactive and goes elsewhere; the reservation fix-ups
// come first, so there is always a shared active core while any core is active.
bool CorePolicy::setActive(Core* core, bool active) {
    RuntimeState& rt = *gRuntime;
    lock_.lock();
    if (!active && core->active.load(std::memory_order_relaxed)) {
        if (core->reservedFor.load(std::memory_order_relaxed)) {
            loseReservationLocked(core);
        } else if (shared_.load(std::memory_order_relaxed) == 1) {
            // The last shared core goes: another core's reservation ends, so the pool keeps one.
            for (int i = 0; i < rt.numCores; ++i) {
                Core* c = &rt.cores[i];
                if (c->active.load(std::memory_order_relaxed) &&
                    c->reservedFor.load(std::memory_order_relaxed)) {
                    loseReservationLocked(c);
                    break;
                }
            }
        }
    }
    core->queueLock.lock();
    const bool was = core->active.exchange(active, std::memory_order_acq_rel);
    core->queueLock.unlock();
    if (was != active) {  // an inactive core is never reserved
        const uint32_t shared = shared_.load(std::memory_order_relaxed);
        shared_.store(active ? shared + 1 : shared - 1, std::memory_order_relaxed);
    }
    unlock();
    return was;
}

}  // namespace arbrt::detail
