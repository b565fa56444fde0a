// Run queues, placement, stealing and moving threads off a released core.
#include <atomic>

#include "arch.h"
#include "runtime_state.h"

namespace arbrt::detail {
namespace {

// `queued` changes only under queueLock, so a plain load+store suffices (no locked RMW); readers
// outside the lock use it only as a hint.
void bumpQueued(Core* core, int delta) {
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

// An idle thief takes a victim's runNext only if it saw the same thread there at the same switch
// count on its previous look: the victim's running thread has not switched since, so it is busy.
ThreadContext* stealRunNext(Core* thief, Core* victim) {
    ThreadContext* t = victim->runNext.load(std::memory_order_relaxed);
    if (!t || !t->allowed.test(thief->id)) return nullptr;
    const uint64_t stamp = victim->contextSwitches.load(std::memory_order_relaxed);
    if (thief->watchedVictim != victim || thief->watchedThread != t ||
        thief->watchedStamp != stamp) {
        thief->watchedVictim = victim;
        thief->watchedThread = t;
        thief->watchedStamp = stamp;
        return nullptr;
    }
    thief->watchedThread = nullptr;
    if (!victim->runNext.compare_exchange_strong(t, nullptr, std::memory_order_acquire)) {
        return nullptr;
    }
    return t;
}

bool allowedOn(const ThreadContext* t, const Core* core) {
    return t->allowed.test(core->id);
}

// Appends under the queue lock if the core is active. Returns false (nothing done) if it is not.
bool pushIfActive(Core* core, ThreadContext* t) {
    core->queueLock.lock();
    if (!core->active.load(std::memory_order_relaxed)) {
        core->queueLock.unlock();
        return false;
    }
    t->core = core;
    t->nextRunnable = nullptr;
    if (core->tail) {
        core->tail->nextRunnable = t;
    } else {
        core->head = t;
    }
    core->tail = t;
    bumpQueued(core, +1);
    core->queueLock.unlock();
    return true;
}

}  // namespace

Core* placeThread(const CoreSet& allowed, int preferred) {
    RuntimeState& rt = *gRuntime;
    if (preferred >= 0 && preferred < rt.numCores && rt.cores[preferred].active.load() &&
        allowed.test(preferred)) {
        return &rt.cores[preferred];
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
            if (c->active.load(std::memory_order_relaxed) && allowed.test(c->id)) pick = c;
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
    // Random picks missed (few allowed cores): scan. No allowed core active: compatibility first,
    // any.
    for (int pass = 0; pass < 2; ++pass) {
        for (int i = 0; i < rt.numCores; ++i) {
            Core* c = &rt.cores[i];
            if (c->active.load(std::memory_order_relaxed) && (pass == 1 || allowed.test(i)))
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
        core->active.load(std::memory_order_relaxed) &&
        !core->releaseRequested.load(std::memory_order_relaxed)) {
        putRunNext(core, t);
        // Go's wakep(): a waker that keeps computing would otherwise strand t until an idle core
        // happened to look. Cheap: returns at once while any idle core still polls.
        wakeIdleCoreForBalance(core);
        return;
    }
    while (!core || !pushIfActive(core, t)) {
        core = placeThread(t->allowed, -1);
        if (!core) {
            pushPending(t);
            return;
        }
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
    if (core->runNext.load(std::memory_order_relaxed)) {
        if (core->queued.load(std::memory_order_relaxed) == 0) {
            core->runNextStreak = 0;
        } else if (++core->runNextStreak > kMaxRunNextStreak) {
            core->runNextStreak = 0;
            if (ThreadContext* t = dequeue(core)) return t;  // let the queue have a turn
        }
        if (ThreadContext* t = core->runNext.exchange(nullptr, std::memory_order_acquire)) return t;
    }
    return dequeue(core);
}

void flushRunNext(Core* core) {
    if (ThreadContext* t = core->runNext.exchange(nullptr, std::memory_order_acquire)) {
        if (!pushIfActive(core, t)) enqueue(t, Wake::requeue);
    }
}

bool hasRunnable(const Core* core) {
    return core->queued.load(std::memory_order_relaxed) != 0 ||
           core->runNext.load(std::memory_order_relaxed) != nullptr;
}

ThreadContext* dequeue(Core* core) {
    if (core->queued.load(std::memory_order_relaxed) == 0) return nullptr;
    core->queueLock.lock();
    ThreadContext* t = core->head;
    if (t) {
        core->head = t->nextRunnable;
        if (!core->head) core->tail = nullptr;
        bumpQueued(core, -1);
    }
    core->queueLock.unlock();
    return t;
}

ThreadContext* swapWithNext(Core* core, ThreadContext* self) {
    if (core->queued.load(std::memory_order_relaxed) == 0) return nullptr;
    core->queueLock.lock();
    ThreadContext* next = core->head;
    if (next) {
        self->switching.store(true, std::memory_order_relaxed);  // published by the unlock
        self->nextRunnable = nullptr;
        self->core = core;
        core->head = next->nextRunnable;
        if (core->head) {
            core->tail->nextRunnable = self;
        } else {
            core->head = self;
        }
        core->tail = self;
    }
    core->queueLock.unlock();
    return next;
}

ThreadContext* steal(Core* thief) {
    RuntimeState& rt = *gRuntime;
    const int n = rt.numCores;
    const int start = int(rdtsc() % uint64_t(n));
    for (int k = 0; k < n; ++k) {
        Core* victim = &rt.cores[(start + k) % n];
        if (victim == thief) continue;
        if (ThreadContext* t = stealRunNext(thief, victim)) {
            t->core = thief;
            thief->steals.fetch_add(1, std::memory_order_relaxed);
            return t;
        }
        if (victim->queued.load(std::memory_order_relaxed) == 0) continue;
        if (!victim->queueLock.tryLock()) continue;
        // Take the oldest thread allowed here (it has waited longest).
        ThreadContext* prev = nullptr;
        ThreadContext* t = victim->head;
        while (t && !allowedOn(t, thief)) prev = t, t = t->nextRunnable;
        if (t) {
            (prev ? prev->nextRunnable : victim->head) = t->nextRunnable;
            if (victim->tail == t) victim->tail = prev;
            bumpQueued(victim, -1);
        }
        victim->queueLock.unlock();
        if (t) {
            // A yield on the victim may have queued t just before switching out of it.
            while (t->switching.load(std::memory_order_acquire)) cpuRelax();
            t->core = thief;
            thief->steals.fetch_add(1, std::memory_order_relaxed);
            return t;
        }
    }
    return nullptr;
}

// Go's "wakep": when work is waiting and no idle carrier is polling, wake one sleeping carrier so
// it can steal. A woken carrier polls for idleSpinNs before sleeping again, which rate-limits these
// wake-ups. The seq_cst fence orders the caller's publication of the work (a queue push or a
// runNext store) before the loads of the idle counts; it pairs with the fence in the idle path
// (sleepingCores++; fence; othersHaveRunnable()), so either we see the sleeper or it sees the work.
void wakeIdleCoreForBalance(Core* busy) {
    RuntimeState& rt = *gRuntime;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (rt.spinningCores.load(std::memory_order_relaxed) != 0 ||
        rt.sleepingCores.load(std::memory_order_relaxed) == 0) {
        return;
    }
    for (int i = 0; i < rt.numCores; ++i) {
        Core* c = &rt.cores[i];
        if (c != busy && c->active.load(std::memory_order_relaxed) &&
            c->sleeping.load(std::memory_order_relaxed)) {
            wakeIfSleeping(c);
            return;
        }
    }
}

// Reads only hints (queued, runNext): a carrier about to sleep uses it to avoid stranding work
// that was published while it stopped spinning. A runNext thread counts only if `thief` may run it;
// a queue counts whenever it is non-empty (checking each thread's allowed set needs the lock).
bool othersHaveRunnable(const Core* thief) {
    RuntimeState& rt = *gRuntime;
    for (int i = 0; i < rt.numCores; ++i) {
        const Core* c = &rt.cores[i];
        if (c == thief || !c->active.load(std::memory_order_relaxed)) continue;
        if (c->queued.load(std::memory_order_relaxed) != 0) return true;
        const ThreadContext* t = c->runNext.load(std::memory_order_relaxed);
        if (t && t->allowed.test(size_t(thief->id))) return true;
    }
    return false;
}

// The seq_cst fence pairs with the one in the idle path
// (sleeping = 1; fence; re-check queue): either we see it asleep, or it sees our thread.
void wakeIfSleeping(Core* core) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (core->sleeping.load(std::memory_order_relaxed) &&
        core->sleeping.exchange(0, std::memory_order_acq_rel)) {
        futexWake(&core->sleeping, 1);
    }
}

void activateCore(Core* core) {
    RuntimeState& rt = *gRuntime;
    core->queueLock.lock();
    const bool wasActive = core->active.exchange(true, std::memory_order_acq_rel);
    core->queueLock.unlock();
    if (!wasActive) rt.activeCores.fetch_add(1, std::memory_order_seq_cst);
    drainPending();
}

void deactivateCore(Core* core) {
    core->queueLock.lock();
    const bool wasActive = core->active.exchange(false, std::memory_order_acq_rel);
    core->queueLock.unlock();
    if (wasActive) gRuntime->activeCores.fetch_sub(1, std::memory_order_seq_cst);
}

void migrateAway(Core* core) {
    ThreadContext* next = core->runNext.exchange(nullptr, std::memory_order_acquire);
    core->queueLock.lock();
    ThreadContext* list = core->head;
    core->head = core->tail = nullptr;
    core->queued.store(0, std::memory_order_relaxed);
    core->queueLock.unlock();
    if (next) {
        next->nextRunnable = list;
        list = next;
    }
    while (list) {
        ThreadContext* t = list;
        list = t->nextRunnable;
        t->core = placeThread(t->allowed, -1);
        enqueue(t, Wake::requeue);
    }
}

}  // namespace arbrt::detail
