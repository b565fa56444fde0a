// Layer A of "nothing may block a carrier" (Go's syscall hand-off). A user thread about to enter a
// system call that may block stamps its core's `blockingSince`. The monitor thread looks at the
// stamps; when a runner has been in the kernel for lendAfterNs while other threads wait to run on
// its core, it lends the core to a spare carrier (or back to its owner, if the owner is waiting for
// it). When the blocked call returns, its thread finds the stamp gone, queues itself to run again
// and its carrier leaves for its dispatcher: an owner waits for its core to come back, a spare goes
// back to the idle list. Owners always get their core back, so in arbiter mode the kernel thread
// the arbiter granted a cpu keeps running it except while it is blocked.
#include <sys/prctl.h>
#include <atomic>

#include <algorithm>
#include <ctime>
#include <memory>
#include <new>
#include <vector>

#include "arbiter/estimation.h"
#include "arbrt/embed/host.h"
#include "arbrt/io.h"
#include "arbrt/time.h"
#include "diag/trace.h"
#include "monitor/io_poller.h"
#include "monitor/retake.h"
#include "monitor/syscall_dispatch.h"
#include "platform/arch.h"
#include "sched/preempt.h"
#include "sched/runtime_state.h"

namespace arbrt {
namespace detail {
namespace {

constexpr uint64_t kMonitorMinPeriodNs = 20'000;
constexpr uint64_t kMonitorMaxPeriodNs = 10'000'000;
// The longest deep sleep (sleepDeepWhileQuiet): the pool trim's period, so that stacks an idle
// program no longer uses still go back.
constexpr uint64_t kMonitorDeepSleepNs = kPoolTrimPeriodNs;
constexpr unsigned long kMonitorTimerSlackNs = 1000;  // its 20 us naps must not become 70 us

// Pops an idle spare; null if none waits. Any thread (spareLock).
Carrier* popIdleSpare() {
    RuntimeState& rt = *gRuntime;
    rt.spareLock.lock();
    Carrier* s = rt.idleSpares;
    if (s) rt.idleSpares = s->nextSpare;
    rt.spareLock.unlock();
    return s;
}

// Pops an idle spare, or makes a new one (the monitor is its only caller, so sparesMade needs no
// atomics). Null when the cap is reached or the kernel refuses a thread.
Carrier* takeSpare() {
    RuntimeState& rt = *gRuntime;
    Carrier* s = popIdleSpare();
    if (s || rt.sparesMade == RuntimeState::kMaxSpareCarriers) return s;
    auto spare = std::unique_ptr<Carrier>(new (std::nothrow) Carrier);
    if (!spare || hostCreateThread(&spare->thread, spareCarrierMain, spare.get()) != 0) {
        return nullptr;
    }
    s = spare.get();
    rt.spares[rt.sparesMade++] = std::move(spare);
    return s;
}

void putSpare(Carrier* s) {
    RuntimeState& rt = *gRuntime;
    rt.spareLock.lock();
    s->nextSpare = rt.idleSpares;
    rt.idleSpares = s;
    rt.spareLock.unlock();
}

// Whether a core whose runner is blocked is worth lending: threads wait to run there, or its owner
// wants it back.
bool wantedByOthers(const Core* core) {
    return hasRunnable(core) || core->lendBack.load(std::memory_order_relaxed);
}

// Gives `core`, whose runner `runner` entered a blocking call at `since`, to its waiting owner or a
// spare (`spareSource`: takeSpare on the monitor, popIdleSpare elsewhere). The CAS to kLending
// fails if the call returned meanwhile, or another lender (the monitor, or the runner itself for
// a retaken call) won: the runner, seeing its stamp gone, then waits for `carrier` to change
// before leaving (see leaveBlockingCall).
bool lendCore(Core* core, Carrier* runner, uint64_t since, Carrier* (*spareSource)()) {
    const bool ownerWaits = core->lendBack.load(std::memory_order_acquire) != 0;
    Carrier* target = ownerWaits ? core->owner : spareSource();
    if (!target) return false;
    if (!core->blockingSince.compare_exchange_strong(since, kLending, std::memory_order_acq_rel)) {
        if (!ownerWaits) putSpare(target);
        return false;
    }
    std::atomic_ref(target->arbiterCpu).store(runner->arbiterCpu, std::memory_order_relaxed);
    if (!ownerWaits) {
        target->core = core;
        core->lent.store(1, std::memory_order_relaxed);  // before `carrier`: the owner reads both
    }
    core->carrier.store(target, std::memory_order_release);
    core->blockingSince.store(0, std::memory_order_release);  // now the new runner's
    if (ownerWaits) {
        core->lent.store(0, std::memory_order_release);
        futexWake(&core->lent, 1);
    } else {
        target->spareWord.store(1, std::memory_order_release);
        futexWake(&target->spareWord, 1);
    }
    gRuntime->coresLent.fetch_add(1, std::memory_order_relaxed);
    return true;
}

// How long a core's runner may go without switching, while threads or timers wait there, before
// the monitor steps in for its dispatcher.
constexpr uint64_t kStuckNs = 1'000'000;

// The monitor's memory of one core between looks (monitor-only).
struct CoreWatch {
    uint64_t switches = 0;        // the core's contextSwitches at the last change seen
    uint64_t sinceTsc = 0;        // when that count was first seen (0: not watching)
    uint64_t nextRetakeTsc = 0;   // no retake look before this (0: due once the bound is reached)
    bool asleepInKernel = false;  // the last retake look found the carrier in a call it left alone
    RetakeWatch retake;
    uint64_t activity = 0;  // allCoresQuiet(): switches, starts and blocking stamp at its last call
};

// The safety net for blocking calls nobody caught (retake.h): after how long a carrier asleep in
// the kernel while threads wait gives its core up; 0 when off (it needs the preemption signal).
uint64_t retakeAfterNs() {
    const RuntimeOptions& o = gRuntime->options;
    return o.preemptSignal != 0 ? o.retakeAfterNs : 0;
}

// The retake part of watchRunningCore(): once the runner has not switched for retakeAfterNs while
// threads wait, look at its carrier (again kStuckNs later if it computes or sleeps where a retake
// cannot help). True when a retake was requested.
bool watchForRetake(Core* core, CoreWatch& w, uint64_t now, uint64_t stuckNs,
                    uint64_t* nextDeadlineNs) {
    const uint64_t boundNs = retakeAfterNs();
    if (boundNs == 0 || !hasRunnable(core)) return false;
    // A look is also due whenever a preemption is: the carrier may have entered a system call
    // since it was last seen computing, and the signal would cut that call short.
    const bool preemptionDue = stuckNs >= gRuntime->options.timeSliceNs;
    if (stuckNs >= boundNs && (now >= w.nextRetakeTsc || preemptionDue)) {
        switch (tryRetake(core, w.switches, &w.retake, preemptionDue)) {
            case RetakeLook::asked:
                w.sinceTsc = now;
                w.nextRetakeTsc = 0;
                *nextDeadlineNs = std::min(*nextDeadlineNs, boundNs);
                return true;
            case RetakeLook::computing:
                // Computing (or spinning): look again only as often as the stuck check, or the
                // monitor's wake-ups would cost every computing carrier its CPU and caches
                // (7% of a compute-bound run with 100 us looks).
                w.asleepInKernel = false;
                w.nextRetakeTsc = now + ticksForNs(std::max(boundNs, kStuckNs));
                break;
            case RetakeLook::asleep:
                w.asleepInKernel = true;
                w.nextRetakeTsc = now + ticksForNs(kStuckNs);
                break;
            case RetakeLook::other:
                w.asleepInKernel = false;
                w.nextRetakeTsc = now + ticksForNs(kStuckNs);
                break;
        }
    }
    const uint64_t dueNs = std::max(stuckNs < boundNs ? boundNs - stuckNs : 0,
                                    w.nextRetakeTsc > now ? ticksToNs(w.nextRetakeTsc - now) : 0);
    *nextDeadlineNs = std::min(*nextDeadlineNs, dueNs);
    return false;
}

// The time slice of the core's runner: longer for a runner whose real-time priority is above every
// thread waiting there (kRealtimeSliceFactor), so they wait as under the kernel's real-time
// throttling instead of sharing the core evenly. Racy reads of fields no one frees (contexts are
// never freed), so a stale answer only delays or hastens one preemption.
uint64_t sliceFor(const Core* core) {
    const uint64_t sliceNs = gRuntime->options.timeSliceNs;
    const Carrier* c = core->carrier.load(std::memory_order_relaxed);
    const ThreadContext* runner =
        c ? std::atomic_ref(c->current).load(std::memory_order_relaxed) : nullptr;
    const uint8_t mine = runner ? runner->rtPriority.load(std::memory_order_relaxed) : 0;
    if (mine == 0) [[likely]]
        return sliceNs;
    const ThreadContext* top = core->rtHead.load(std::memory_order_relaxed);
    const uint8_t waiting = top ? top->queuedPriority.load(std::memory_order_relaxed) : 0;
    return mine > waiting ? sliceNs * kRealtimeSliceFactor : sliceNs;
}

// Go's sysmon for a core that is running, not blocked: a runner that computes without calling the
// runtime keeps its dispatcher from firing the core's timers and from handing out its queued
// threads. Once it has not switched for kStuckNs while something waits there, fire its due timers
// and wake a sleeping core to steal what is runnable. Lowers `nextDeadlineNs` to when this core
// next needs a look.
void watchRunningCore(Core* core, CoreWatch& w, uint64_t* nextDeadlineNs) {
    // A time slice below kStuckNs is honoured: the monitor looks that much sooner.
    const uint64_t stuckBoundNs = std::min(kStuckNs, gRuntime->options.timeSliceNs);
    const bool waiting =
        hasRunnable(core) || core->nextDeadlineTsc.load(std::memory_order_relaxed) != ~uint64_t{0};
    if (!waiting || core->sleeping.load(std::memory_order_relaxed) ||
        !core->active.load(std::memory_order_relaxed)) {
        w.sinceTsc = 0;
        return;
    }
    const uint64_t now = rdtsc();
    const uint64_t switches = core->contextSwitches.load(std::memory_order_relaxed);
    if (w.sinceTsc == 0 || switches != w.switches) {
        w.switches = switches;
        w.sinceTsc = now;
        w.nextRetakeTsc = 0;
        w.asleepInKernel = false;
        const uint64_t retakeNs = retakeAfterNs();
        *nextDeadlineNs =
            std::min(*nextDeadlineNs, retakeNs ? std::min(retakeNs, stuckBoundNs) : stuckBoundNs);
        return;
    }
    const uint64_t stuckNs = ticksToNs(now - w.sinceTsc);
    if (watchForRetake(core, w, now, stuckNs, nextDeadlineNs)) return;
    if (stuckNs < stuckBoundNs) {
        *nextDeadlineNs = std::min(*nextDeadlineNs, stuckBoundNs - stuckNs);
        return;
    }
    fireExpiredTimers(core);
    uint64_t nextLook = std::max(timeToNextDeadline(core), stuckBoundNs);
    if (hasRunnable(core)) {
        // First an idle core may take the waiting threads; if they still wait a time slice after
        // the runner's last switch, interrupt the runner.
        wakeIdleCoreForBalance(core);
        const uint64_t sliceNs = sliceFor(core);
        if (stuckNs >= sliceNs && !w.asleepInKernel) {  // a signal would only interrupt the call
            requestPreemption(core, switches);
            w.sinceTsc = now;  // ask again a slice later if it was not at a safe point
        } else {
            nextLook = std::min(nextLook, sliceNs - stuckNs);
        }
    }
    *nextDeadlineNs = std::min(*nextDeadlineNs, nextLook);
}

// One look at every core: fires the timers of blocked cores (nobody else may) and lends those
// that have waited long enough with work queued; watches running cores (watchRunningCore). Returns
// whether any core was lent, and lowers `nextDeadlineNs` to when a core next needs a look.
bool lookAtCores(std::vector<CoreWatch>& watches, uint64_t* nextDeadlineNs) {
    RuntimeState& rt = *gRuntime;
    bool lentAny = false;
    for (int i = 0; i < rt.numCores; ++i) {
        Core* core = &rt.cores[i];
        const uint64_t since = core->blockingSince.load(std::memory_order_acquire);
        if (since == 0) {
            watchRunningCore(core, watches[size_t(i)], nextDeadlineNs);
            continue;
        }
        watches[size_t(i)].sinceTsc = 0;
        if (since == kLending) continue;
        if (rdtsc() - since < rt.lendAfterTicks) {
            *nextDeadlineNs = std::min(*nextDeadlineNs, ticksToNs(rt.lendAfterTicks));
            continue;
        }
        fireExpiredTimers(core);
        if (wantedByOthers(core)) {
            lentAny |=
                lendCore(core, core->carrier.load(std::memory_order_acquire), since, takeSpare);
        } else {
            *nextDeadlineNs = std::min(*nextDeadlineNs, timeToNextDeadline(core));
        }
    }
    return lentAny;
}

// Sleeps up to `ns` unless asked to look (monitorWord); true when asked.
bool monitorSleep(uint64_t ns) {
    RuntimeState& rt = *gRuntime;
    timespec ts{time_t(ns / 1'000'000'000), long(ns % 1'000'000'000)};
    rt.monitorNapping.store(ns > kMonitorMinPeriodNs, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with nudgeMonitorFor()
    if (rt.monitorWord.load(std::memory_order_relaxed) == 0) futexWait(&rt.monitorWord, 0, &ts);
    const bool asked = rt.monitorWord.exchange(0, std::memory_order_relaxed) != 0;
    rt.monitorNapping.store(false, std::memory_order_relaxed);
    return asked;
}

// Asks the monitor to look now: wakes it if it sleeps, or keeps its next sleep from starting
// (monitorSleep() reads the word first). Only the first asker since the last look makes the futex
// call.
void askMonitorToLook(RuntimeState& rt) {
    if (rt.monitorWord.exchange(1, std::memory_order_acq_rel) == 0) futexWake(&rt.monitorWord, 1);
}

// Whether no core needs the monitor's looks, and none did anything since the last call: each
// active one either has its carrier asleep idle or its runner in a blocking call with nothing
// queued behind it (a core whose carrier is not made yet: nothing queued), and has neither
// switched threads nor begun another blocking call since. Anything else (a runner, a polling
// carrier, a core being lent) is not quiet. The "since" keeps a server that is idle between
// frequent requests from sleeping deep between them: every request would then pay for waking
// the monitor. seq_cst loads: after the monitor's seq_cst store of monitorDeepSleep (see
// wakeMonitorIfDeepAsleep).
bool allCoresQuiet(const RuntimeState& rt, std::vector<CoreWatch>& watches) {
    bool quiet = true;
    for (int i = 0; i < rt.numCores; ++i) {
        const Core* core = &rt.cores[i];
        CoreWatch& w = watches[size_t(i)];
        const uint64_t since = core->blockingSince.load(std::memory_order_seq_cst);
        const uint64_t activity = core->contextSwitches.load(std::memory_order_relaxed) +
                                  core->threadStarts.load(std::memory_order_relaxed) + since;
        quiet &= activity == w.activity;
        w.activity = activity;
        if (!quiet || !core->active.load(std::memory_order_seq_cst)) continue;
        if (i >= rt.nextDeferredCarrier) {
            quiet = !hasRunnable(core);
        } else if (core->sleeping.load(std::memory_order_seq_cst) == 0) {
            quiet = since != 0 && since != kLending && !hasRunnable(core);
        }
    }
    return quiet;
}

// Go's sysmon sleeps on sched.sysmonwait once every P is idle; so does this monitor, up to
// kMonitorDeepSleepNs instead of kMonitorMaxPeriodNs, once every core has been quiet since the
// last such look, a full period or more before (allCoresQuiet; an idle daemon under arbrun: 100
// monitor wake-ups a second -> 1). Whatever makes a core busy again wakes it:
// a carrier waking (carrier.cc), a blocking call returning (exitBlockingCall), a core acquired
// (activateCore), as well as the existing nudges (a thread queued behind a blocked runner,
// deferred carriers wanted, stop). The flag is stored before the cores are looked at and each
// waker loads it after making its core busy, both seq_cst: either the monitor sees the busy core
// and stays awake, or the waker sees the flag and wakes it. Not while tracing (its util rows stay
// regular). True when it slept.
bool sleepDeepWhileQuiet(RuntimeState& rt, std::vector<CoreWatch>& watches, uint64_t nextNs) {
    if (tracing()) return false;
    rt.monitorDeepSleep.store(true, std::memory_order_seq_cst);
    const bool quiet = allCoresQuiet(rt, watches);
    if (quiet) {
        rt.monitorDeepSleeps.fetch_add(1, std::memory_order_relaxed);
        if (monitorSleep(std::min(nextNs, kMonitorDeepSleepNs))) {
            rt.monitorDeepSleepsWoken.fetch_add(1, std::memory_order_relaxed);
        }
    }
    rt.monitorDeepSleep.store(false, std::memory_order_relaxed);
    return quiet;
}

// Waits until the core is ours again after it was lent during our blocking call: asks the spare
// running it to leave (it looks at lendBack at its next switch or dispatcher pass), or is handed it
// by the monitor if that spare blocks in the kernel itself.
void reclaimCore(Carrier* owner) {
    Core* core = owner->core;
    core->lendBack.store(1, std::memory_order_release);
    wakeCarrier(core);  // the spare may sleep idle or parked
    // Whoever clears `lent` wakes us: the spare leaving (also on stop) or the monitor handing the
    // core back while that spare is blocked.
    while (core->lent.load(std::memory_order_acquire) != 0) futexWait(&core->lent, 1, nullptr);
    core->lendBack.store(0, std::memory_order_relaxed);
    core->carrier.store(owner, std::memory_order_release);
}

}  // namespace

void dispatchOwnCore(Carrier* owner) {
    RuntimeState& rt = *gRuntime;
    for (;;) {
        runDispatcher(owner);
        if (owner->core->carrier.load(std::memory_order_acquire) == owner ||
            rt.stopping.load(std::memory_order_acquire)) {
            return;
        }
        reclaimCore(owner);
    }
}

void* spareCarrierMain(void* arg) {
    auto* s = static_cast<Carrier*>(arg);
    RuntimeState& rt = *gRuntime;
    s->nativeTcb = threadPointer();
    writeTcbSlot(s->nativeTcb, kCarrierSlot, s);
    recordCarrierSignalMask(s);
    enableSyscallDispatch(s);
    for (;;) {
        while (s->spareWord.load(std::memory_order_acquire) == 0 &&
               !rt.stopping.load(std::memory_order_acquire)) {
            futexWait(&s->spareWord, 0, nullptr);
        }
        if (s->spareWord.load(std::memory_order_acquire) == 0) break;  // stopping, idle
        s->spareWord.store(0, std::memory_order_relaxed);
        Core* core = s->core;
        runDispatcher(s);  // until lent on, asked to give the core back, released or stopped
        if (core->carrier.load(std::memory_order_acquire) == s) {
            // Leave the core for its owner (which waits in reclaimCore, or will when it returns).
            std::atomic_ref(s->arbiterCpu).store(-1, std::memory_order_relaxed);
            core->carrier.store(nullptr, std::memory_order_relaxed);
            core->lent.store(0, std::memory_order_release);
            futexWake(&core->lent, 1);
        }
        s->core = nullptr;
        putSpare(s);
    }
    writeTcbSlot(s->nativeTcb, kCarrierSlot, nullptr);
    return nullptr;
}

// Standalone mode: the carriers of cores 1.. (runtime_state.h: nextDeferredCarrier), made by the
// monitor once a second user thread is alive, so that neither main() nor a program that never
// creates a thread waits for them: on a many-CPU host that is a kernel thread per CPU. Carriers
// inherit the creator's timer slack, so the monitor's own (1 us) is set back to its default (the
// program's, inherited at the monitor's creation) around the creations. One that cannot be
// created now is tried again at the monitor's next look; meanwhile idle carriers steal what waits
// on its core.
void startDeferredCarriers(RuntimeState& rt) {
    prctl(PR_SET_TIMERSLACK, 0UL, 0, 0, 0);
    while (rt.nextDeferredCarrier < rt.numCores && !rt.stopping.load(std::memory_order_acquire)) {
        if (startCarrier(rt, rt.nextDeferredCarrier) != 0) break;
        ++rt.nextDeferredCarrier;
    }
    prctl(PR_SET_TIMERSLACK, kMonitorTimerSlackNs, 0, 0, 0);
}

// Whether the monitor has carriers to create now.
bool deferredCarriersDue(const RuntimeState& rt) {
    return rt.nextDeferredCarrier < rt.numCores &&
           rt.deferredCarriersWanted.load(std::memory_order_acquire);
}

void* monitorMain(void*) {
    RuntimeState& rt = *gRuntime;
    prctl(PR_SET_TIMERSLACK, kMonitorTimerSlackNs, 0, 0, 0);
    if (deferredCarriersDue(rt)) startDeferredCarriers(rt);
    uint64_t period = kMonitorMinPeriodNs;
    std::vector<CoreWatch> watches(size_t(rt.numCores));
    uint64_t nextRefineNs = nowNs();
    uint64_t retakesSeen = retakeCount();
    while (!rt.stopping.load(std::memory_order_acquire)) {
        if (deferredCarriersDue(rt)) startDeferredCarriers(rt);
        const uint64_t now = nowNs();
        if (now >= nextRefineNs) nextRefineNs = refineClockRate();  // timers stay exact
        uint64_t next = ~uint64_t{0};  // lowered by whatever needs a look by then
        // A retaken call's runner lends its core itself (lendOwnCoreNow): lending all the same.
        const uint64_t retakes = retakeCount();
        const bool lent = lookAtCores(watches, &next) || retakes != retakesSeen;
        retakesSeen = retakes;
        traceUtilisationIfDue();
        // Readiness while every carrier is busy (no netpoller): looked for once it is stale.
        next = std::min(next, netpollFromMonitor());
        // Pooled stacks unused for a trim period go back in chunks, one per millisecond.
        if (trimContextPool(now)) next = std::min<uint64_t>(next, 1'000'000);
        // The estimator's next sample bounds a deep sleep only while it has something to decide:
        // an idle process at its fewest cores is not sampled until a core does something.
        const uint64_t sampleIn = estimationTick();
        const uint64_t deepNext = estimationWaitsForActivity() ? next : std::min(next, sampleIn);
        next = std::min(next, sampleIn);
        // Go's sysmon: short naps while lending happens (its own or retaken calls'), doubling up to
        // 10 ms when nothing needed doing; a thread that becomes runnable behind a blocked runner
        // nudges it awake. A program whose threads wait in raw calls (no syscall user dispatch)
        // is retaken at every hand-off: with the runner's own lend, 20 us naps took its 8-thread
        // futex ring from ~430 to 230-315 us per hand-off here; that lend with doubling naps
        // saved nothing (the monitor's next look came later).
        period = lent ? kMonitorMinPeriodNs : std::min(period * 2, kMonitorMaxPeriodNs);
        if (period == kMonitorMaxPeriodNs && deepNext >= kMonitorMaxPeriodNs &&
            sleepDeepWhileQuiet(rt, watches, deepNext)) {
            continue;
        }
        monitorSleep(std::max(kMonitorMinPeriodNs, std::min(period, next)));
    }
    return nullptr;
}

void wakeMonitorIfDeepAsleep() {
    RuntimeState& rt = *gRuntime;
    if (rt.monitorDeepSleep.load(std::memory_order_seq_cst)) askMonitorToLook(rt);
}

// The runner's own lend (core.h). The monitor may be lending the same core at the same time:
// lendCore's CAS on the stamp picks one, and the other puts its spare back.
bool lendOwnCoreNow(Carrier* self, uint64_t stamp) {
    Core* core = self->core;
    if (!wantedByOthers(core)) return false;
    return lendCore(core, self, stamp, popIdleSpare);
}

void nudgeMonitorFor(Core* core) {
    RuntimeState& rt = *gRuntime;
    if (core->blockingSince.load(std::memory_order_relaxed) <= kLending) return;
    std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with monitorSleep()
    if (rt.monitorNapping.load(std::memory_order_relaxed)) askMonitorToLook(rt);
}

// The release store of the flag pairs with deferredCarriersDue()'s acquire; the first caller asks
// the monitor to look (a monitor that does not exist yet makes them as it starts).
void wantDeferredCarriers() {
    RuntimeState& rt = *gRuntime;
    if (rt.deferredCarriersWanted.exchange(true, std::memory_order_acq_rel)) return;
    if (!rt.monitorWanted.load(std::memory_order_acquire)) {
        wantMonitor();
    } else {
        askMonitorToLook(rt);
    }
}

// The first caller starts the monitor, as the kernel thread it runs on (a user thread's caller
// borrows its carrier's own TCB: glibc's pthread_create must see a thread it knows). Callers are
// thread creation and enqueue, never a signal handler. Should the kernel refuse the thread, the
// program goes on without time slices and lending, and the next caller tries again.
void wantMonitor() {
    RuntimeState& rt = *gRuntime;
    if (rt.monitorWanted.exchange(true, std::memory_order_acq_rel)) return;
    runOnKernelThreadTcb(
        [](void*) {
            if (!startMonitor()) gRuntime->monitorWanted.store(false, std::memory_order_release);
        },
        nullptr);
}

bool startMonitor() {
    RuntimeState& rt = *gRuntime;
    const bool started = hostCreateThread(&rt.monitorThread, monitorMain, nullptr) == 0;
    rt.monitorStarted.store(started, std::memory_order_release);
    return started;
}

void stopMonitorAndSpares() {
    RuntimeState& rt = *gRuntime;
    if (rt.monitorStarted.load(std::memory_order_acquire)) {
        rt.monitorWord.store(1, std::memory_order_relaxed);
        futexWake(&rt.monitorWord, 1);
        hostJoinThread(rt.monitorThread);
        rt.monitorStarted.store(false, std::memory_order_relaxed);
    }
    for (int i = 0; i < rt.sparesMade; ++i) futexWake(&rt.spares[i]->spareWord, 1);
    for (int i = 0; i < rt.sparesMade; ++i) hostJoinThread(rt.spares[i]->thread);
    for (int i = 0; i < rt.sparesMade; ++i) closeRetakeFiles(rt.spares[i].get(), 1);
    closeRetakeFiles(rt.carriers.get(), rt.numCores);
    rt.sparesMade = 0;
}

}  // namespace detail

using namespace detail;

uint64_t enterBlockingCall() {
    ThreadContext* t = currentContext();
    if (!t) return 0;
    Core* core = t->carrier->core;
    // Already inside a bracket (a call nested in a bracketed one, e.g. from a signal handler): the
    // outer bracket covers it. Only the core's runner writes a stamp, and a runner's core is its
    // own (a switch closes a bracket it would leave open: switchTo, parkCurrent), so a stamp here
    // is the caller's.
    if (core->blockingSince.load(std::memory_order_relaxed) != 0) return 0;
    // Relaxed: the monitor only needs to see it eventually.
    const uint64_t stamp = blockingStamp(rdtsc());
    core->blockingSince.store(stamp, std::memory_order_relaxed);
    return stamp;
}

void exitBlockingCall(uint64_t token) {
    if (token) leaveBlockingCall(currentContext());
}

namespace detail {

void leaveBlockingCall(ThreadContext* self) {
    Carrier* c = self->carrier;
    Core* core = c->core;
    // The stamp is read, not taken from the caller's token: a switch inside the bracket reopened
    // it with a new one (switchTo). A stamp on a core this carrier still runs is ours (only the
    // runner writes one); the monitor's CAS to kLending races with ours, and one of them fails.
    // seq_cst: the monitor may have found this core quiet (wakeMonitorIfDeepAsleep).
    uint64_t stamp = core->blockingSince.load(std::memory_order_acquire);
    if (stamp > kLending && core->carrier.load(std::memory_order_acquire) == c &&
        core->blockingSince.compare_exchange_strong(stamp, 0, std::memory_order_seq_cst)) {
        wakeMonitorIfDeepAsleep();
        return;
    }
    // No stamp and the core still ours: not a lend (the monitor stores `carrier` before clearing a
    // lent stamp), so nothing is open. Every switch reopens the bracket it closed (switchTo,
    // parkCurrent), so this is not expected; it ends the bracket rather than spin for a lend.
    if (stamp == 0 && core->carrier.load(std::memory_order_acquire) == c) return;
    // The monitor is lending (or has lent) our core: once `carrier` names the new runner, leave.
    while (core->carrier.load(std::memory_order_acquire) == c) cpuRelax();
    rejoinAfterLend(self);
}

void reopenBlockingCall(ThreadContext* self) {
    self->carrier->core->blockingSince.store(blockingStamp(rdtsc()), std::memory_order_relaxed);
}

}  // namespace detail
}  // namespace arbrt
