// A carrier's dispatcher: run what is runnable on its core, steal when idle, poll briefly and then
// sleep on a futex or, as the netpoller, in the runtime's epoll (io_poller.cc), and give the core
// up when it is released.
#include <ctime>

#include "diag/trace.h"
#include "monitor/io_poller.h"
#include "platform/arch.h"
#include "sched/runtime_state.h"

namespace arbrt::detail {

using boost::context::detail::jump_fcontext;

namespace {

// An idle period ended with `t` about to run: the poll learner hears whether an event (readiness,
// a timer) readied it or another thread did (idle_spin.h).
void noteIdleEndedWith(Core* core, ThreadContext* t) {
    if (core->idleSpin.holding()) [[unlikely]] {
        const bool byEvent = t->eventWake.load(std::memory_order_relaxed) != 0;
        if (byEvent) t->eventWake.store(0, std::memory_order_relaxed);
        core->idleSpin.resolve(byEvent);
    }
}

// Runs `t` until control comes back to the dispatcher (after any number of direct thread-to-thread
// switches); the elapsed ticks, less those spent waiting in place meanwhile, count as the core's
// busy time.
void runThread(Carrier* c, ThreadContext* t) {
    Core* core = c->core;
    const uint64_t start = rdtsc();
    const uint64_t inPlaceBefore = c->inPlaceIdleTicks;
    noteIdleEndedWith(core, t);
    c->record.from = nullptr;
    c->record.action = AfterSwitch::nothing;
    std::atomic_ref(c->current).store(t, std::memory_order_relaxed);
    std::atomic_ref(t->carrier).store(c, std::memory_order_relaxed);
    core->threadStarts.store(core->threadStarts.load(std::memory_order_relaxed) + 1,
                             std::memory_order_relaxed);  // owner-only: no locked increment
    setThreadPointer(t->tcb);
    transfer_t back = jump_fcontext(t->savedContext, &c->record);
    completeSwitch(back);
    if (core->carrier.load(std::memory_order_relaxed) != c) return;  // lent away meanwhile
    const uint64_t elapsed = rdtsc() - start;
    const uint64_t waited = c->inPlaceIdleTicks - inPlaceBefore;
    core->busyTicks.store(
        core->busyTicks.load(std::memory_order_relaxed) + (elapsed > waited ? elapsed - waited : 0),
        std::memory_order_relaxed);
}

// What only the core's dispatcher does: release the core, give it back to its owner, stop.
bool dispatcherWanted(const Core* core) {
    return core->releaseRequested.load(std::memory_order_relaxed) != 0 ||
           core->lendBack.load(std::memory_order_relaxed) != 0 ||
           gRuntime->stopping.load(std::memory_order_relaxed);
}

bool hasWork(Core* core) {
    return hasRunnable(core) || dispatcherWanted(core);
}

// Whether `waiter` (a thread on whose stack its carrier waits in place; null for a dispatcher) has
// been signalled: its permit is set, so it resumes. One load of its first line.
bool permitted(const ThreadContext* waiter) {
    return waiter && (waiter->runState.load(std::memory_order_relaxed) & kPermit) != 0;
}

// What ends an idle pass: work on the core, or, waiting in place, the waiter's permit or a refill
// the dispatcher must do.
bool hasWorkFor(Core* core, const ThreadContext* waiter) {
    return hasWork(core) || (waiter && (permitted(waiter) || contextPoolWantsRefill()));
}

// A spare runs the core of an owner that wants it back: it must leave at its next pass.
bool mustGiveBack(Carrier* c, Core* core) {
    return c != core->owner && core->lendBack.load(std::memory_order_acquire) != 0;
}

// Fires due timers of every core: a core whose carrier is stuck in a long computation cannot fire
// its own, and its woken threads then become stealable.
void fireAllTimers() {
    RuntimeState& rt = *gRuntime;
    for (int i = 0; i < rt.numCores; ++i) fireExpiredTimers(&rt.cores[i]);
}

// The longest this carrier may sleep: until its own next deadline, and, if it is the
// lowest-numbered sleeper, until the next deadline of any core that is not asleep (someone must
// fire those).
uint64_t sleepBudgetNs(Core* core) {
    RuntimeState& rt = *gRuntime;
    uint64_t budget = timeToNextDeadline(core);
    bool keeper = true;
    for (int i = 0; i < core->id; ++i) {
        if (rt.cores[i].sleeping.load(std::memory_order_relaxed)) keeper = false;
    }
    if (keeper) {
        for (int i = 0; i < rt.numCores; ++i) {
            Core* other = &rt.cores[i];
            if (other != core && !other->sleeping.load(std::memory_order_relaxed)) {
                budget = std::min(budget, timeToNextDeadline(other));
            }
        }
    }
    return budget;
}

// Sleeps until woken or until the budget's deadline: in the runtime's epoll if this carrier took
// the netpoller role (`netpoll`, io_poller.cc), else on its futex. The fence pairs with
// wakeIfSleeping() and wakeIdleCoreForBalance(): work published on any core before a waker's fence
// is seen here, or the waker sees this core asleep and wakes it (`sleeping` says how). Work seen on
// another core means a waker may have skipped us while we were still spinning: go back to stealing
// instead of sleeping. Returns a thread the netpoll made ready for this core to run now, or null;
// `slept` says whether it waited (on the futex or the epoll) rather than finding work first.
ThreadContext* sleepUntilWork(Core* core, const ThreadContext* waiter, bool netpoll, bool* slept) {
    RuntimeState& rt = *gRuntime;
    core->sleeping.store(netpoll ? kSleepingInEpoll : kSleepingOnFutex, std::memory_order_relaxed);
    rt.sleepingCores.fetch_add(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    ThreadContext* ready = nullptr;
    if (!hasWorkFor(core, waiter) && !othersHaveRunnable(core)) {
        *slept = true;
        // "Might sleep forever" first, then the budget: a timer added meanwhile on a busy core is
        // either seen by sleepBudgetNs() or its adder sees this and wakes us (alertKeeper()).
        core->sleepUntilTsc.store(~uint64_t{0}, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_seq_cst);
        uint64_t budget = sleepBudgetNs(core);
        // The arbiter's release requests arrive through memory. Where the provider also signals
        // them, the release watcher wakes the carrier of every core asked back
        // (release_watcher.cc); otherwise a sleeping carrier that holds a granted cpu looks at
        // least every millisecond (its forced reclaim is 10 ms). Those looks were a thousand
        // wake-ups a second per idle carrier, and they hid a lost wake-up: timers moved off a
        // released core to a sleeping one (migrateTimers() now wakes it).
        if (rt.provider && !rt.provider->hasReleaseWakeups())
            budget = std::min<uint64_t>(budget, 1'000'000);
        if (budget != ~uint64_t{0}) {
            core->sleepUntilTsc.store(rdtsc() + ticksForNs(budget), std::memory_order_relaxed);
        }
        if (netpoll) {
            ready = netpollWait(core, budget);  // a budget of 0 still looks once
        } else if (budget > 0) {
            timespec ts{time_t(budget / 1'000'000'000), long(budget % 1'000'000'000)};
            futexWait(&core->sleeping, kSleepingOnFutex, budget == ~uint64_t{0} ? nullptr : &ts);
        }
        core->sleepUntilTsc.store(0, std::memory_order_relaxed);
    }
    // A waker that exchanged the word meanwhile may still write the wake-up eventfd: the next
    // netpoller then returns once for nothing (io_poller.cc).
    core->sleeping.store(0, std::memory_order_relaxed);
    if (netpoll) dropNetpollRole(core);
    rt.sleepingCores.fetch_sub(1, std::memory_order_relaxed);
    if (*slept) {
        // The monitor may have found every core quiet and slept deep: this one is busy now.
        std::atomic_thread_fence(std::memory_order_seq_cst);
        wakeMonitorIfDeepAsleep();
    }
    return ready;
}

constexpr int kPausesBetweenSteals = 64;  // ~25 ns each here

// Go's resetspinning(): a waker skips the sleeping carriers while any carrier spins, since that one
// will look. So the last spinner to leave with work looks once more, or threads made runnable
// while it spun (beyond the one it takes) wait on a busy core with every other carrier asleep:
// a burst of creates or wake-ups landing on the core that was itself spinning stayed there for
// good. The fence pairs with wakeIdleCoreForBalance()'s: either that waker saw spinningCores at 0
// (and woke a sleeper itself), or the work it published is seen here. `took` says whether the
// thread we will run is already out of every queue (stolen, or readied by the netpoll).
//
// With no carrier asleep there is nobody to wake, and the check ends there: a carrier that goes to
// sleep after it counts itself in sleepingCores (then a fence, then a look at every core) sees
// whatever work this one would have found (our fence precedes its fence, and the skipping waker's
// precedes ours). On a hand-off to a polling core that spares reading other cores' queue lines,
// which their runners write.
void wakeOneIfWorkIsLeft(Core* core, bool took) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (gRuntime->sleepingCores.load(std::memory_order_relaxed) == 0) return;
    const uint32_t own = core->queued.load(std::memory_order_relaxed) +
                         (core->runNext.load(std::memory_order_relaxed) != nullptr);
    // Threads elsewhere count whoever may take them: `core` may have been reserved meanwhile.
    if (own > (took ? 0u : 1u) || threadsWaitBesides(core, nullptr)) wakeIdleCoreForBalance(core);
}

// Polls (new work, due timers, threads to steal) for the budget the core's idle gaps warrant (up to
// idleSpinNs, see idle_spin.h), then sleeps. The gap until work came back is recorded whether it
// was caught by polling or after a sleep, so the core learns what a full poll would have caught.
// While the context pool wants its reserve refilled (context_pool.h), each pass that found nothing
// to run equips one context (a few microseconds) and polls again, past the budget if need be: the
// core's spare time, never a runnable thread's, pays for the stacks and TCBs of later creates.
// `waiter`: the parked thread on whose stack the pass runs (waitInPlace), whose permit also ends
// it; the refill is then left to the dispatcher, and so is a sleep on the futex: a carrier asleep
// there with a thread waiting in place would make that thread's readiness cost two wake-ups (the
// netpoller's, then this one's), where the netpoller runs a parked thread itself. So with a waiter
// the pass sleeps only as the netpoller, and otherwise sets *mustPark. Returns a claimed thread to
// run (stolen, or readied by the netpoll), or null.
ThreadContext* idlePass(Carrier* c, const ThreadContext* waiter, bool* mustPark) {
    RuntimeState& rt = *gRuntime;
    Core* core = c->core;
    const uint64_t start = rdtsc();
    // A period still held since the last idle one found work that no thread run here came from
    // (another core took it, or it was a release request): a hand-off as far as polling goes.
    core->idleSpin.resolve(false);
    const uint64_t budget = core->idleSpin.budget(rt.idleSpinTicks);
    const uint64_t peekAfter = rt.idleSpinTicks / IdleSpinLearner::kProbeDivisor;
    core->idleSinceTsc.store(start, std::memory_order_relaxed);
    // Only a core that may steal counts as polling: wakers skip the sleepers while one polls. A
    // core reserved for an exclusive thread runs its owner only, so counting it stranded threads
    // on a busy core while another core slept.
    const bool thief = core->reservedFor.load(std::memory_order_relaxed) == nullptr;
    if (thief) rt.spinningCores.fetch_add(1, std::memory_order_relaxed);
    ThreadContext* stolen = nullptr;
    bool work = false;
    bool readiness = false;  // the work was a readiness event (netpoll)
    bool refilled = false;   // this pass equipped a pooled context: poll again before sleeping
    do {
        fireAllTimers();
        if ((work = hasWorkFor(core, waiter) || pollArbiter(c))) break;
        if ((stolen = steal(core))) break;
        // Readiness while no carrier waits on the epoll: caught here, not a sleep later. Not during
        // a short probe: the netpoll wait that follows it returns at once on a pending event, so
        // a look there would only add a system call to every idle period.
        if (rdtsc() - start >= peekAfter && (stolen = netpollPeek(core))) {
            readiness = true;
            break;
        }
        if (!waiter && (refilled = refillContextPool())) continue;
        if (budget == 0) break;  // no poll warranted: one look, then sleep
        // Between looks at other cores, watch only our own core's words: new work for us is seen
        // within a pause, while other cores' lines (written by their runners on every switch)
        // are read every ~1.6 us instead of every ~100 ns, which slowed those runners (spawn+join
        // on the busy core: ~450 -> ~360 ns).
        for (int i = 0; i < kPausesBetweenSteals && !hasWorkFor(core, waiter); ++i) cpuRelax();
    } while (refilled || rdtsc() - start < budget);
    const bool lastSpinner = thief && rt.spinningCores.fetch_sub(1, std::memory_order_relaxed) == 1;
    bool slept = false;
    if (!stolen && !work) {
        const bool netpoll = takeNetpollRole(core);
        if (waiter && !netpoll) {
            *mustPark = true;
        } else {
            stolen = sleepUntilWork(core, waiter, netpoll, &slept);
            readiness = stolen != nullptr;
            work = stolen || hasWorkFor(core, waiter) || othersHaveRunnable(core);
        }
    }
    // Leaving with work found while polling, or seen just before sleeping (the poll budget ran
    // out as it came). A carrier that slept was woken by name and owes nothing; one that leaves to
    // steal from another core looks again after its steal.
    if (lastSpinner && !slept && (stolen || hasRunnable(core))) {
        wakeOneIfWorkIsLeft(core, stolen != nullptr);
    }
    const uint64_t gap = rdtsc() - start;
    // Readiness does not teach the core to poll: the netpoller takes it with one wake-up, as the
    // kernel wakes a native thread, so polling for it would only buy better-than-native latency
    // with CPU (a lightly loaded server's events often come just inside the budget, enough to
    // keep it polling in stretches). Polling is for hand-offs between threads.
    if ((work || stolen) && !readiness) {
        core->idleSpin.hold(gap,
                            rt.idleSpinTicks);  // a hand-off unless an event woke t (runThread)
    } else {
        core->idleSpin.record(gap, false, rt.idleSpinTicks);
    }
    core->idleTicks.store(core->idleTicks.load(std::memory_order_relaxed) + gap,
                          std::memory_order_relaxed);
    core->idleSinceTsc.store(0, std::memory_order_relaxed);
    if (waiter) c->inPlaceIdleTicks += gap;
    return stolen;
}

void idle(Carrier* c) {
    bool mustPark = false;  // never set without a waiter
    if (ThreadContext* t = idlePass(c, nullptr, &mustPark)) runThread(c, t);
}

// Whether the core may be waited for in place: still run by this carrier, active, and wanted by
// nothing only its dispatcher does (dispatcherWanted, or a pool refill). Relaxed loads: each is
// checked again by the dispatcher that a false answer leads to.
bool mayWaitInPlace(Carrier* c, Core* core) {
    return core->carrier.load(std::memory_order_relaxed) == c &&
           core->active.load(std::memory_order_relaxed) && !dispatcherWanted(core) &&
           !contextPoolWantsRefill();
}

// Whether `self` may resume on `core` as it is, unplaced: the core is its home and takes it (not
// reserved for another thread, allowed), and no class change waits for its switch. A thread that
// must move parks through the dispatcher, and its wake-up places it (core_policy.h).
bool mayResumeOn(const ThreadContext* self, const Core* core) {
    return self->core == core && self->replace.load(std::memory_order_relaxed) == 0 &&
           self->allowed.test(size_t(core->id)) && acceptsThread(core, self);
}

// Standalone mode: sleeps until the released core is acquired again, the runtime stops, the core
// is released again (acquire and release may both happen before we run: the dispatcher loop then
// completes the new release), or (a spare) its owner wants it back. parkWord is reset before each
// check, and wakeCarrier() sets it after changing the state, so no wake-up is lost.
void parkWhileReleased(Carrier* c) {
    RuntimeState& rt = *gRuntime;
    Core* core = c->core;
    for (;;) {
        core->parkWord.store(0, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with wakeCarrier()
        if (core->active.load(std::memory_order_acquire) ||
            core->releaseRequested.load(std::memory_order_acquire) || mustGiveBack(c, core) ||
            rt.stopping.load(std::memory_order_relaxed)) {
            return;
        }
        futexWait(&core->parkWord, 0, nullptr);
    }
}

// Gives the core up: its queued threads and timers move to active cores (or wait for one), and
// releaseCore() callers are woken. In standalone mode the carrier then sleeps until the core is
// acquired again (or the runtime stops); in arbiter mode it returns, to hand the cpu back.
void releaseHere(Carrier* c) {
    RuntimeState& rt = *gRuntime;
    Core* core = c->core;
    rt.releaseLock.lock();
    migrateAway(core);
    migrateTimers(core);
    rt.releaseLock.unlock();
    core->releaseRequested.store(0, std::memory_order_relaxed);
    core->releaseWaiters.lock.lock();
    while (Waiter* w = core->releaseWaiters.popFront()) wake(w);  // under the lock: see claimWake
    core->releaseWaiters.lock.unlock();
    if (rt.provider) return;
    traceEvent(TraceEvent::release, core->id, -1, 0);
    parkWhileReleased(c);
}

}  // namespace

// Waiting in place. A thread that parks with nothing else runnable on its core would switch to the
// dispatcher, which idles, then switch back to whichever thread comes: two thread-pointer writes
// per wake-up, each an arch_prctl system call where the CPU or kernel lacks FSGSBASE (3.5-4 us in a
// VM that traps it, `arbrun doctor`), which was half of what an idle server costs beyond native.
// Instead the carrier runs the same idle pass on the parking thread's stack, its TCB still loaded:
// when that thread is the one woken (a server's thread waiting for its next request), it resumes
// with no switch at all; when another comes, one direct switch; when the core needs its dispatcher,
// or the carrier would sleep other than as the netpoller (idlePass), the park goes on as before.
//
// The thread stays kParking throughout, so it is in no queue: no other carrier can take it, and a
// signal only leaves a permit (which commitPark() turns into a wake-up if the thread switches out
// after all). A permit on a thread waiting in place also wakes its core (signalContext), which is
// why `waitingOnCore` is published before the first look at the permit. The carrier shows no
// running thread meanwhile (`current` null): the monitor, the release watcher and signal routing
// treat it as dispatching, which it is.
ThreadContext* waitInPlace(Carrier* c, ThreadContext* self) {
    Core* core = c->core;
    std::atomic_ref(c->current).store(nullptr, std::memory_order_relaxed);
    self->waitingOnCore.store(int16_t(core->id), std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with wakeWaiterInPlace()
    ThreadContext* next = nullptr;
    // The dispatcher's business first: a permit that comes with it is left to commitPark().
    bool mustPark = false;
    while (!mustPark && mayWaitInPlace(c, core) && mayResumeOn(self, core)) {
        if (permitted(self)) {
            next = self;
            break;
        }
        fireExpiredTimers(core);
        if ((next = takeNext(core)) || (next = idlePass(c, self, &mustPark))) break;
    }
    self->waitingOnCore.store(-1, std::memory_order_relaxed);
    if (next) noteIdleEndedWith(core, next);
    return next;
}

void runDispatcher(Carrier* c) {
    RuntimeState& rt = *gRuntime;
    Core* core = c->core;
    while (!rt.stopping.load(std::memory_order_acquire)) {
        // Lent away during a blocking call, or (a spare) asked to give the core back.
        if (core->carrier.load(std::memory_order_acquire) != c || mustGiveBack(c, core)) return;
        pollArbiter(c);
        if (core->releaseRequested.load(std::memory_order_acquire)) {
            releaseHere(c);
            if (rt.provider) return;  // hand the cpu back to the arbiter
            continue;
        }
        if (!rt.provider && !core->active.load(std::memory_order_acquire)) {
            parkWhileReleased(c);  // released while lent: the spare released it, we wait here
            continue;
        }
        fireExpiredTimers(core);
        if (ThreadContext* t = takeNext(core)) {
            runThread(c, t);
        } else {
            idle(c);
        }
    }
}

bool pollArbiter(Carrier* c) {
    RuntimeState& rt = *gRuntime;
    if (c->arbiterCpu < 0 || !rt.provider->mustReleaseCore(c->arbiterCpu)) return false;
    Core* core = c->core;
    deactivateCore(core);
    core->releaseRequested.store(1, std::memory_order_release);
    return true;
}

void runGrantedCores(Carrier* c) {
    RuntimeState& rt = *gRuntime;
    while (!rt.stopping.load(std::memory_order_acquire)) {
        const int cpu = rt.provider->blockUntilCoreAvailable();  // the arbiter pins us to `cpu`
        if (cpu < 0) return;                                     // provider shut down
        std::atomic_ref(c->arbiterCpu).store(cpu, std::memory_order_relaxed);
        activateCore(c->core);
        traceEvent(TraceEvent::grant, c->core->id, cpu, 1);
        dispatchOwnCore(c);       // until the arbiter wants the core back (or stop)
        deactivateCore(c->core);  // stopping while granted: leave it inactive, as a release would
        std::atomic_ref(c->arbiterCpu).store(-1, std::memory_order_relaxed);
        traceEvent(TraceEvent::release, c->core->id, cpu, 0);
        rt.provider->releaseCore(cpu);
    }
}

void alertKeeper(Core* core) {
    RuntimeState& rt = *gRuntime;
    const uint64_t deadline = core->nextDeadlineTsc.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with sleepUntilWork()
    for (int i = 0; i < rt.numCores; ++i) {
        Core* keeper = &rt.cores[i];
        if (!keeper->sleeping.load(std::memory_order_relaxed)) continue;
        // The lowest-numbered sleeper keeps other cores' deadlines (sleepBudgetNs): wake it only
        // if it would sleep past this one; it recomputes its budget when it sleeps again.
        if (keeper != core && keeper->sleepUntilTsc.load(std::memory_order_relaxed) > deadline) {
            wakeIfSleeping(keeper);
        }
        return;
    }
}

void wakeCarrier(Core* core) {
    wakeIfSleeping(core);
    core->parkWord.store(1, std::memory_order_release);
    futexWake(&core->parkWord, 1);
}

}  // namespace arbrt::detail
