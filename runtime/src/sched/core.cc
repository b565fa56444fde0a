// Run queues, placement, stealing and moving threads off a released core.
#include <atomic>

#include "arbrt/embed/invariant.h"
#include "monitor/io_poller.h"
#include "platform/arch.h"
#include "sched/runtime_state.h"

namespace arbrt::detail {
namespace {

// `queued` changes only under queueLock, so a plain load+store suffices (no locked RMW); readers
// outside the lock use it only as a hint.
void bumpQueued(Core* core, int delta) {
    ARB_ASSERT(delta > 0 || core->queued.load(std::memory_order_relaxed) > 0,
               "a core's queued count never goes below the threads in its queues");
    core->queued.store(core->queued.load(std::memory_order_relaxed) + uint32_t(delta),
                       std::memory_order_relaxed);
}

constexpr uint32_t kMaxRunNextStreak = 16;

// Moves every pending thread (runnable while no core was active) to active cores.
void drainPending() {
    RuntimeState& rt = *gRuntime;
    rt.pendingLock.lock();
    ThreadContext* list = rt.pendingHead;
    rt.pendingHead = rt.pendingTail = nullptr;
    rt.pendingLock.unlock();
    while (list) {
        ThreadContext* t = list;
        list = t->nextRunnable;
        t->core = nullptr;
        enqueue(t, Wake::wakeup);
    }
}

// Parks a runnable thread while no core is active. Push, then look for an active core (seq_cst): a
// core activated concurrently either sees the thread in the list or we see the core.
void pushPending(ThreadContext* t) {
    RuntimeState& rt = *gRuntime;
    rt.pendingLock.lock();
    t->nextRunnable = nullptr;
    (rt.pendingTail ? rt.pendingTail->nextRunnable : rt.pendingHead) = t;
    rt.pendingTail = t;
    rt.pendingLock.unlock();
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (rt.activeCores.load(std::memory_order_relaxed) != 0) drainPending();
}

bool pushIfActive(Core* core, ThreadContext* t);

// Puts t in the core's runNext slot (owner-only); a thread already there moves to the queue. Only
// thieves clear the slot concurrently, so a plain store suffices when it is empty.
void putRunNext(Core* core, ThreadContext* t) {
    core->runNextStamp.store(core->contextSwitches.load(std::memory_order_relaxed),
                             std::memory_order_relaxed);
    if (!core->runNext.load(std::memory_order_relaxed)) {
        core->runNext.store(t, std::memory_order_release);
        return;
    }
    if (ThreadContext* old = core->runNext.exchange(t, std::memory_order_acq_rel)) {
        pushIfActive(core, old);
    }
}

// An idle thief takes a victim's runNext only if it has seen the same thread there at the same
// switch count for at least kRunNextStealDelayNs: the victim's running thread has not switched
// since, so it is busy. The delay is Go's (runqsteal waits ~3 us before taking runnext): a thread
// that creates or wakes another and then blocks (spawn+join, condvar hand-offs) switches to it
// within a few hundred nanoseconds, and stealing it first would move both halves of every such
// pair to different cores (measured: half of spawn+join's threads stolen, 2x slower).
ThreadContext* stealRunNext(Core* thief, Core* victim) {
    ThreadContext* t = victim->runNext.load(std::memory_order_relaxed);
    if (!t || !t->allowed.test(thief->id)) return nullptr;
    const uint64_t stamp = victim->contextSwitches.load(std::memory_order_relaxed);
    const uint64_t now = rdtsc();
    if (thief->watchedVictim != victim || thief->watchedThread != t ||
        thief->watchedStamp != stamp) {
        thief->watchedVictim = victim;
        thief->watchedThread = t;
        thief->watchedStamp = stamp;
        thief->watchedSinceTsc = now;
        return nullptr;
    }
    if (now - thief->watchedSinceTsc < gRuntime->runNextStealDelayTicks) return nullptr;
    thief->watchedThread = nullptr;
    if (!victim->runNext.compare_exchange_strong(t, nullptr, std::memory_order_acquire)) {
        return nullptr;
    }
    return t;
}

bool allowedOn(const ThreadContext* t, const Core* core) {
    return t->allowed.test(core->id);
}

// Whether `t` may wait in the core's runNext slot: a normal thread, on a core not reserved for
// another thread. Reads `t`'s first line and the core's queue line, both already in cache here.
bool runNextTakes(const Core* core, const ThreadContext* t) {
    const ThreadContext* owner = core->reservedFor.load(std::memory_order_relaxed);
    return t->queueClass == kNormalQueue && t->rtPriority.load(std::memory_order_relaxed) == 0 &&
           (owner == nullptr || owner == t);
}

// Appends to the tail of one FIFO (caller holds the queue lock).
void append(ThreadContext*& head, ThreadContext*& tail, ThreadContext* t) {
    t->nextRunnable = nullptr;
    if (tail) {
        tail->nextRunnable = t;
    } else {
        head = t;
    }
    tail = t;
}

// Pops the head of one FIFO, or null (caller holds the queue lock).
ThreadContext* popFront(ThreadContext*& head, ThreadContext*& tail) {
    ThreadContext* t = head;
    if (t) {
        head = t->nextRunnable;
        if (!head) tail = nullptr;
    }
    return t;
}

// Inserts `t` into the core's real-time list behind every thread of its priority or higher, so
// the list stays sorted (highest first) and FIFO among equals (caller holds the queue lock). A
// walk: real-time threads queued on one core at once are few.
void insertRealtime(Core* core, ThreadContext* t, uint8_t priority) {
    t->queuedPriority.store(priority, std::memory_order_relaxed);
    ThreadContext* prev = nullptr;
    ThreadContext* next = core->rtHead.load(std::memory_order_relaxed);
    while (next && next->queuedPriority.load(std::memory_order_relaxed) >= priority) {
        prev = next;
        next = next->nextRunnable;
    }
    t->nextRunnable = next;
    if (prev) {
        prev->nextRunnable = t;
    } else {
        core->rtHead.store(t, std::memory_order_relaxed);
    }
}

// Queues `t` on `core` by its class and priority (caller holds the queue lock and has checked
// that the core takes it). The common case, a normal thread without a real-time priority, costs
// one more load of t's first line.
void appendLocked(Core* core, ThreadContext* t) {
    ARB_ASSERT((t->runState.load(std::memory_order_relaxed) & kPhaseMask) == kRunnable,
               "only a runnable thread joins a run queue (a parked one is claimed first)");
    ARB_ASSERT(t->queueClass == kNormalQueue || t->queueClass == kBatchQueue,
               "queueClass names one of the core's queues");
    t->core = core;
    if (t->queueClass == kNormalQueue) [[likely]] {
        const uint8_t priority = t->rtPriority.load(std::memory_order_relaxed);
        if (priority != 0) [[unlikely]] {
            insertRealtime(core, t, priority);
        } else {
            append(core->head, core->tail, t);
        }
    } else {
        append(core->batchHead, core->batchTail, t);
        core->batchQueued.store(core->batchQueued.load(std::memory_order_relaxed) + 1,
                                std::memory_order_relaxed);
    }
    bumpQueued(core, +1);
}

// Appends under the queue lock if the core takes `t` (active, not reserved for another thread).
// Returns false (nothing done) if it does not. A batch thread joins the batch queue.
bool pushIfActive(Core* core, ThreadContext* t) {
    core->queueLock.lock();
    const ThreadContext* owner = core->reservedFor.load(std::memory_order_relaxed);
    if (!core->active.load(std::memory_order_relaxed) || (owner && owner != t)) {
        core->queueLock.unlock();
        return false;
    }
    appendLocked(core, t);
    core->queueLock.unlock();
    return true;
}

// Pops the first real-time thread, else the oldest normal thread, else (unless `normalOnly`) the
// oldest batch thread; caller holds the queue lock.
ThreadContext* popLocked(Core* core, bool normalOnly) {
    if (ThreadContext* t = core->rtHead.load(std::memory_order_relaxed)) [[unlikely]] {
        core->rtHead.store(t->nextRunnable, std::memory_order_relaxed);
        bumpQueued(core, -1);
        return t;
    }
    ThreadContext* t = popFront(core->head, core->tail);
    if (!t && !normalOnly && core->batchHead) {
        t = popFront(core->batchHead, core->batchTail);
        core->batchQueued.store(core->batchQueued.load(std::memory_order_relaxed) - 1,
                                std::memory_order_relaxed);
    }
    if (t) bumpQueued(core, -1);
    return t;
}

// Pops the oldest normal thread of the queue, or null.
ThreadContext* takeNextNormalFromQueue(Core* core) {
    if (normalQueued(core) == 0) return nullptr;
    core->queueLock.lock();
    ThreadContext* t = popLocked(core, true);
    core->queueLock.unlock();
    return t;
}

// Which of a core's run queues a thief looks at.
enum class StealFrom : uint8_t { realtime, normal, batch };

// Takes the first thread allowed on `thief` (the highest real-time priority, or the one that has
// waited longest) from one of the victim's queues, or null; gives up at once if the victim's lock
// is taken.
ThreadContext* stealFromQueue(Core* thief, Core* victim, StealFrom from) {
    if (!victim->queueLock.tryLock()) return nullptr;
    ThreadContext* rtHead = victim->rtHead.load(std::memory_order_relaxed);
    ThreadContext* rtTail = nullptr;  // unused: the real-time list has no tail
    ThreadContext*& head = from == StealFrom::realtime ? rtHead
                           : from == StealFrom::batch  ? victim->batchHead
                                                       : victim->head;
    ThreadContext*& tail = from == StealFrom::realtime ? rtTail
                           : from == StealFrom::batch  ? victim->batchTail
                                                       : victim->tail;
    ThreadContext* prev = nullptr;
    ThreadContext* t = head;
    while (t && !allowedOn(t, thief)) prev = t, t = t->nextRunnable;
    if (t) {
        (prev ? prev->nextRunnable : head) = t->nextRunnable;
        if (tail == t) tail = prev;
        bumpQueued(victim, -1);
        if (from == StealFrom::batch) {
            victim->batchQueued.store(victim->batchQueued.load(std::memory_order_relaxed) - 1,
                                      std::memory_order_relaxed);
        }
        if (from == StealFrom::realtime) victim->rtHead.store(rtHead, std::memory_order_relaxed);
    }
    victim->queueLock.unlock();
    return t;
}

// A stolen thread becomes the thief's. A yield on the victim may have queued it just before
// switching out of it: wait until its registers are saved.
ThreadContext* claimStolen(Core* thief, ThreadContext* t) {
    while (t->switching.load(std::memory_order_acquire)) cpuRelax();
    t->core = thief;
    thief->steals.fetch_add(1, std::memory_order_relaxed);
    return t;
}

// Takes runNext for the core's runner. The exchange is seq_cst (the same xchg as acquire on
// x86-64) and so is the load of reservedFor after it: a reservation made before a racing
// putRunNext() stored this thread is then seen here (CorePolicy::reserveLocked stores reservedFor
// and exchanges runNext seq_cst), and a thread that must not run here goes elsewhere.
ThreadContext* takeRunNextLocal(Core* core) {
    ThreadContext* t = core->runNext.exchange(nullptr, std::memory_order_seq_cst);
    if (!t) return nullptr;
    const ThreadContext* owner = core->reservedFor.load(std::memory_order_seq_cst);
    if (owner == nullptr || owner == t) [[likely]] {
        return t;
    }
    t->core = placeThread(t, -1);
    enqueue(t, Wake::requeue);
    return nullptr;
}

// takeNextFifo()'s body, local to this file so that takeNext() calls it directly (an exported
// function would be called through the PLT: the library is position-independent).
ThreadContext* fifoPick(Core* core) {
    if (core->runNext.load(std::memory_order_relaxed)) {
        if (normalQueued(core) == 0) {
            core->runNextStreak = 0;
        } else if (++core->runNextStreak > kMaxRunNextStreak) {
            core->runNextStreak = 0;
            if (ThreadContext* t = takeNextNormalFromQueue(core)) return t;  // the queue's turn
        }
        if (ThreadContext* t = takeRunNextLocal(core)) return t;
    }
    return dequeue(core);
}

}  // namespace

// Exported for cohort.cc; takeRunNextLocal() does it.
ThreadContext* takeRunNext(Core* core) {
    return takeRunNextLocal(core);
}

// `active` and `reservedFor` share the queue's cache line, so the reservation check costs no extra
// line per pick; t's reservedCore shares a line with its allowed set.
Core* placeThread(const ThreadContext* t, int preferred) {
    RuntimeState& rt = *gRuntime;
    if (Core* home = std::atomic_ref(t->reservedCore).load(std::memory_order_relaxed))
        [[unlikely]] {
        if (acceptsThread(home, t)) return home;  // an exclusive thread stays on its core
    }
    const CoreSet& allowed = t->allowed;
    if (preferred >= 0 && preferred < rt.numCores && allowed.test(size_t(preferred)) &&
        acceptsThread(&rt.cores[preferred], t)) {
        return &rt.cores[preferred];
    }
    // Standalone, before the deferred carriers are wanted, only core 0 has a carrier: a thread that
    // may run there goes there (elsewhere it would only bring the other carriers into being).
    if (!rt.deferredCarriersWanted.load(std::memory_order_relaxed) && allowed.test(0) &&
        acceptsThread(&rt.cores[0], t)) [[unlikely]] {
        return &rt.cores[0];
    }
    // Power of two choices (Arachne): two random allowed active cores, the less loaded wins. A
    // per-call xorshift on the TSC is random enough and touches no shared state.
    uint64_t x = rdtsc() | 1;
    Core* best = nullptr;
    for (int tries = 0; tries < 2 * rt.numCores + 2 && !best; ++tries) {
        Core* picks[2] = {nullptr, nullptr};
        for (Core*& pick : picks) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            Core* c = &rt.cores[x % uint64_t(rt.numCores)];
            if (allowed.test(size_t(c->id)) && acceptsThread(c, t)) pick = c;
        }
        if (picks[0] && picks[1]) {
            best = picks[0]->queued.load(std::memory_order_relaxed) <=
                           picks[1]->queued.load(std::memory_order_relaxed)
                       ? picks[0]
                       : picks[1];
        } else {
            best = picks[0] ? picks[0] : picks[1];
        }
    }
    if (best) return best;
    // Random picks missed (few allowed cores): scan. No allowed core takes it: compatibility
    // first, any core that takes it; then any active core (a reservation is changing: the caller's
    // push fails and it asks again).
    for (int pass = 0; pass < 3; ++pass) {
        for (int i = 0; i < rt.numCores; ++i) {
            Core* c = &rt.cores[i];
            if (pass == 0 && !allowed.test(size_t(i))) continue;
            if (pass < 2 ? acceptsThread(c, t) : c->active.load(std::memory_order_relaxed))
                return c;
        }
    }
    return nullptr;
}

void enqueue(ThreadContext* t, Wake how) {
    const bool wakeup = how != Wake::requeue;
    Core* core = t->core;
    Carrier* self = currentCarrier();
    // Only the carrier running a core may treat it as "mine" (runNext, no wake-up needed): a
    // carrier whose core was lent away during a blocking call still names it in `core`.
    if (self && self->core && self->core->carrier.load(std::memory_order_relaxed) != self) {
        self = nullptr;
    }
    if (how == Wake::handoff && self && self->core == core &&
        core->active.load(std::memory_order_relaxed) && runNextTakes(core, t) &&
        !core->releaseRequested.load(std::memory_order_relaxed)) {
        putRunNext(core, t);
        // Go's wakep(): a waker that keeps computing would otherwise strand t until an idle core
        // happened to look. Cheap: returns at once while any idle core still polls.
        wakeIdleCoreForBalance(core);
        return;
    }
    while (!core || !pushIfActive(core, t)) {
        core = placeThread(t, -1);
        if (!core) {
            pushPending(t);
            return;
        }
    }
    // A thread queued on a core whose carrier is deferred (standalone, one live thread so far, yet
    // it may run only elsewhere than core 0): that carrier is wanted now. One load of a
    // read-mostly flag.
    if (!gRuntime->deferredCarriersWanted.load(std::memory_order_relaxed) && core->id != 0)
        [[unlikely]] {
        wantDeferredCarriers();
    }
    if (self && self->core == core) {
        // Our own core is awake: we are running on it. Ask for help only when more than one thread
        // waits here (one is usually the thread we are about to switch to).
        if (wakeup && core->queued.load(std::memory_order_relaxed) > 1)
            wakeIdleCoreForBalance(core);
        return;
    }
    wakeIfSleeping(core);
    nudgeMonitorFor(core);
    if (wakeup) wakeIdleCoreForBalance(core);
}

ThreadContext* takeNext(Core* core) {
    // A queued real-time thread goes before runNext (one load of the queue line, which the
    // checks below read anyway).
    if (core->rtHead.load(std::memory_order_relaxed)) [[unlikely]] {
        if (ThreadContext* t = dequeue(core)) return t;
    }
    // One byte of the runNext line, which the FIFO pick reads anyway.
    if (core->cohortDispatch) [[unlikely]]
        return takeNextCohort(core);
    return fifoPick(core);
}

ThreadContext* takeNextFifo(Core* core) {
    return fifoPick(core);
}

// As takeNext(), without the batch queue (and without the streak: a yielding thread asked).
ThreadContext* takeNextNormal(Core* core) {
    if (core->rtHead.load(std::memory_order_relaxed)) [[unlikely]] {
        if (ThreadContext* t = takeNextNormalFromQueue(core)) return t;  // real-time first
    }
    if (core->runNext.load(std::memory_order_relaxed)) {
        if (ThreadContext* t = takeRunNextLocal(core)) return t;
    }
    return takeNextNormalFromQueue(core);
}

void flushRunNext(Core* core) {
    if (ThreadContext* t = core->runNext.exchange(nullptr, std::memory_order_acquire)) {
        if (!pushIfActive(core, t)) enqueue(t, Wake::requeue);
    }
}

ThreadContext* dequeue(Core* core) {
    if (core->queued.load(std::memory_order_relaxed) == 0) return nullptr;
    core->queueLock.lock();
    ThreadContext* t = popLocked(core, false);
    core->queueLock.unlock();
    return t;
}

ThreadContext* swapWithNext(Core* core, ThreadContext* self) {
    if (core->queued.load(std::memory_order_relaxed) == 0) return nullptr;
    core->queueLock.lock();
    const ThreadContext* owner = core->reservedFor.load(std::memory_order_relaxed);
    const bool batch = self->queueClass != kNormalQueue;
    ThreadContext* next = owner && owner != self ? nullptr : popLocked(core, !batch);
    if (next) {
        self->switching.store(true, std::memory_order_relaxed);  // published by the unlock
        appendLocked(core, self);
    }
    core->queueLock.unlock();
    return next;
}

ThreadContext* steal(Core* thief) {
    RuntimeState& rt = *gRuntime;
    if (thief->reservedFor.load(std::memory_order_relaxed)) return nullptr;  // runs its owner only
    const int n = rt.numCores;
    const int start = int(rdtsc() % uint64_t(n));
    bool batchSeen = false;
    for (int k = 0; k < n; ++k) {
        Core* victim = &rt.cores[(start + k) % n];
        // A reserved core's only runnable thread is its owner, which must stay there.
        if (victim == thief || victim->reservedFor.load(std::memory_order_relaxed)) continue;
        if (ThreadContext* t = stealRunNext(thief, victim)) return claimStolen(thief, t);
        if (victim->queued.load(std::memory_order_relaxed) == 0) continue;
        batchSeen |= victim->batchQueued.load(std::memory_order_relaxed) != 0;
        if (victim->rtHead.load(std::memory_order_relaxed)) [[unlikely]] {
            if (ThreadContext* t = stealFromQueue(thief, victim, StealFrom::realtime))
                return claimStolen(thief, t);
        }
        if (ThreadContext* t = stealFromQueue(thief, victim, StealFrom::normal))
            return claimStolen(thief, t);
    }
    // No normal thread anywhere: a batch thread (batchQueued is only a hint, so none are missed
    // for long: an idle thief looks again within microseconds).
    for (int k = 0; batchSeen && k < n; ++k) {
        Core* victim = &rt.cores[(start + k) % n];
        if (victim == thief || victim->batchQueued.load(std::memory_order_relaxed) == 0 ||
            victim->reservedFor.load(std::memory_order_relaxed)) {
            continue;
        }
        if (ThreadContext* t = stealFromQueue(thief, victim, StealFrom::batch))
            return claimStolen(thief, t);
    }
    return nullptr;
}

// Go's "wakep": when work is waiting and no idle carrier is polling, wake one sleeping carrier so
// it can steal. A woken carrier polls for idleSpinNs before sleeping again, which rate-limits these
// wake-ups. The seq_cst fence orders the caller's publication of the work (a queue push or a
// runNext store) before the loads of the idle counts; it pairs with the fence in the idle path
// (sleepingCores++; fence; othersHaveRunnable()), so either we see the sleeper or it sees the work,
// and with the last spinner's (spinningCores--; fence; queues: carrier.cc, wakeOneIfWorkIsLeft()),
// so a spinner we counted on either took our work or looks again.
void wakeIdleCoreForBalance(Core* busy) {
    RuntimeState& rt = *gRuntime;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // sleepingCores first: its line is read-mostly, while spinningCores' changes at every idle
    // period of any core (a hand-off to a polling core read it just after that core wrote it).
    if (rt.sleepingCores.load(std::memory_order_relaxed) == 0 ||
        rt.spinningCores.load(std::memory_order_relaxed) != 0) {
        return;
    }
    // A core asleep on its futex first: the netpoller (asleep in epoll) keeps watching readiness.
    Core* netpoller = nullptr;
    for (int i = 0; i < rt.numCores; ++i) {
        Core* c = &rt.cores[i];
        // A reserved core would not steal: waking it would only use up this wake-up.
        const uint32_t sleeping = c->sleeping.load(std::memory_order_relaxed);
        if (c != busy && sleeping && c->active.load(std::memory_order_relaxed) &&
            !c->reservedFor.load(std::memory_order_relaxed)) {
            if (sleeping == kSleepingInEpoll) {
                netpoller = c;
                continue;
            }
            wakeIfSleeping(c);
            return;
        }
    }
    if (netpoller) wakeIfSleeping(netpoller);
}

// Reads only hints (queued, runNext), of the active, unreserved cores other than `self` (a
// reserved core's runnable thread is its owner: not for thieves). A runNext thread counts only if
// `thief` may run it (any, with no thief); a queue counts whenever it is non-empty (checking each
// thread's allowed set needs the lock).
bool threadsWaitBesides(const Core* self, const Core* thief) {
    RuntimeState& rt = *gRuntime;
    for (int i = 0; i < rt.numCores; ++i) {
        const Core* c = &rt.cores[i];
        if (c == self || !c->active.load(std::memory_order_relaxed) ||
            c->reservedFor.load(std::memory_order_relaxed)) {
            continue;
        }
        if (c->queued.load(std::memory_order_relaxed) != 0) return true;
        const ThreadContext* t = c->runNext.load(std::memory_order_relaxed);
        if (t && (!thief || t->allowed.test(size_t(thief->id)))) return true;
    }
    return false;
}

// A carrier about to sleep uses it to avoid stranding work that was published while it stopped
// spinning. A reserved core never steals, so nothing elsewhere is its work.
bool othersHaveRunnable(const Core* thief) {
    if (thief->reservedFor.load(std::memory_order_relaxed)) return false;
    return threadsWaitBesides(thief, thief);
}

// The seq_cst fence pairs with the one in the idle path
// (sleeping = 1 or 2; fence; re-check queue): either we see it asleep, or it sees our thread. The
// exchange makes one waker the one that wakes it, on its futex or (the netpoller) through the
// epoll's wake-up eventfd.
void wakeIfSleeping(Core* core) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!core->sleeping.load(std::memory_order_relaxed)) return;
    const uint32_t was = core->sleeping.exchange(0, std::memory_order_acq_rel);
    if (was == kSleepingOnFutex) {
        futexWake(&core->sleeping, 1);
    } else if (was == kSleepingInEpoll) {
        wakeNetpoller();
    }
}

void activateCore(Core* core) {
    RuntimeState& rt = *gRuntime;
    if (!rt.policy.setActive(core, true)) rt.activeCores.fetch_add(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // a deep-sleeping monitor must look
    wakeMonitorIfDeepAsleep();
    drainPending();
}

void deactivateCore(Core* core) {
    RuntimeState& rt = *gRuntime;
    if (rt.policy.setActive(core, false)) rt.activeCores.fetch_sub(1, std::memory_order_seq_cst);
}

// Empties the core's runNext slot and both run queues. The seq_cst exchange of runNext pairs with
// takeRunNext() when a reservation calls this right after storing reservedFor (seq_cst): a thread
// that a racing putRunNext() leaves there afterwards is sent away by the core's runner.
ThreadContext* takeAllRunnableLocked(Core* core) {
    ThreadContext* list = core->head;
    if (core->tail) {
        core->tail->nextRunnable = core->batchHead;
    } else {
        list = core->batchHead;
    }
    core->head = core->tail = core->batchHead = core->batchTail = nullptr;
    if (ThreadContext* rt = core->rtHead.exchange(nullptr, std::memory_order_relaxed)) {
        ThreadContext* last = rt;
        while (last->nextRunnable) last = last->nextRunnable;
        last->nextRunnable = list;  // highest priority first: re-queued in this order
        list = rt;
    }
    core->queued.store(0, std::memory_order_relaxed);
    core->batchQueued.store(0, std::memory_order_relaxed);
    if (ThreadContext* next = core->runNext.exchange(nullptr, std::memory_order_seq_cst)) {
        next->nextRunnable = list;
        list = next;
    }
    return list;
}

void migrateAway(Core* core) {
    core->queueLock.lock();
    ThreadContext* list = takeAllRunnableLocked(core);
    core->queueLock.unlock();
    while (list) {
        ThreadContext* t = list;
        list = t->nextRunnable;
        t->core = placeThread(t, -1);
        enqueue(t, Wake::requeue);
    }
}

}  // namespace arbrt::detail
