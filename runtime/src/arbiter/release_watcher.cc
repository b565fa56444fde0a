// Fast release (arbiter mode): the dispatcher notices "give core k back" at its next pass, but a
// user thread that computes without calling the runtime would hold the core until the arbiter's
// forced reclaim. A kernel thread sleeps on the arbiter's release wake-ups instead; for each core
// asked back it wakes the core's carrier (idle or parked: it looks at once) and asks the running
// thread to yield now (preemption at a safe point), so the dispatcher releases the core within
// microseconds — unless the runner is expected to park within RuntimeOptions::releaseDeferNs
// (barrier-aware release, park_history.h): then the core goes back at that park.
#include "arbiter/release_watcher.h"
#include <atomic>

#include <vector>

#include "platform/arch.h"
#include "sched/park_history.h"
#include "sched/preempt.h"
#include "sched/runtime_state.h"

namespace arbrt::detail {
namespace {

constexpr uint64_t kRetryNs = 50'000;  // while a release is pending (unsafe point, race)

// The watcher's memory of one core's pending release. Owned by the watcher thread.
struct PendingRelease {
    uint64_t sinceTsc = 0;      // when the watcher first saw it (0: none pending)
    bool awaitingPark = false;  // it was left to the runner's next park (counted once)
    bool preempted = false;     // ... and the runner was preempted after all (counted once)
};

// Preempts the runner of a core asked back, unless it is expected to park soon (barrier-aware
// release, park_history.h): then the dispatcher releases the core at that park, and the watcher
// looks again at its next retry. The runner and its rhythm are racy reads: a thread that switched
// meanwhile only makes this decision one retry late.
void preemptOrAwaitPark(Core* core, Carrier* c, PendingRelease* pending, uint64_t budgetTicks) {
    RuntimeState& rt = *gRuntime;
    if (core->blockingSince.load(std::memory_order_relaxed) != 0) return;  // lent: no runner
    const ThreadContext* runner = std::atomic_ref(c->current).load(std::memory_order_relaxed);
    if (runner == nullptr) return;  // dispatching: it sees the request itself
    const uint64_t now = rdtsc();
    const uint64_t waited = now > pending->sinceTsc ? now - pending->sinceTsc : 0;
    if (shouldAwaitPark(loadParkRhythm(&runner->parkRhythm), now, waited, budgetTicks)) {
        if (!pending->awaitingPark) {
            pending->awaitingPark = true;
            rt.releasesAwaitingPark.fetch_add(1, std::memory_order_relaxed);
        }
        return;
    }
    if (pending->awaitingPark && !pending->preempted) {
        pending->preempted = true;
        rt.releasesPreemptedAfterWaiting.fetch_add(1, std::memory_order_relaxed);
    }
    requestPreemption(core, core->contextSwitches.load(std::memory_order_relaxed));
}

// One look at every core granted by the arbiter. Returns whether a release is still pending.
bool actOnReleaseRequests(std::vector<PendingRelease>* pendingByCore, uint64_t budgetTicks) {
    RuntimeState& rt = *gRuntime;
    bool pending = false;
    for (int i = 0; i < rt.numCores; ++i) {
        Core* core = &rt.cores[i];
        PendingRelease& p = (*pendingByCore)[size_t(i)];
        Carrier* c = core->carrier.load(std::memory_order_acquire);
        // Racy reads of fields the carrier writes: a stale value costs one needless wake-up or
        // one retry kRetryNs later.
        const int cpu = c ? std::atomic_ref(c->arbiterCpu).load(std::memory_order_relaxed) : -1;
        if (cpu < 0 || !rt.provider->mustReleaseCore(cpu)) {
            p = {};
            continue;
        }
        pending = true;
        if (p.sinceTsc == 0) p.sinceTsc = rdtsc();
        // The signal first: a computing runner is the slow case, and waking the carrier costs a
        // futex call that only an idle or parked carrier needs (it then has no runner to preempt).
        preemptOrAwaitPark(core, c, &p, budgetTicks);
        wakeCarrier(core);
    }
    return pending;
}

// Sleeps without a time-out while nothing is pending: an idle process costs no wake-ups. stop()
// changes releaseWatcherInterrupt after `stopping`; the watcher reads the word before it checks
// `stopping`, so a stop between the two ends the wait at once.
void* releaseWatcherMain(void*) {
    RuntimeState& rt = *gRuntime;
    std::vector<PendingRelease> pendingByCore(size_t(rt.numCores));
    const uint64_t budgetTicks = ticksForNs(rt.options.releaseDeferNs);
    uint32_t seen = 0;
    bool pending = false;
    for (;;) {
        const uint32_t interrupt = rt.releaseWatcherInterrupt.load(std::memory_order_acquire);
        if (rt.stopping.load(std::memory_order_acquire)) break;
        rt.provider->waitForReleaseRequests(
            &seen, rt.releaseWatcherInterrupt, interrupt,
            pending ? kRetryNs : arbclient::CoreProvider::kNoTimeout);
        if (rt.stopping.load(std::memory_order_acquire)) break;
        pending = actOnReleaseRequests(&pendingByCore, budgetTicks);
    }
    return nullptr;
}

}  // namespace

bool startReleaseWatcher() {
    RuntimeState& rt = *gRuntime;
    if (!rt.provider || !rt.provider->hasReleaseWakeups()) return true;  // nothing to watch
    rt.releaseWatcherStarted =
        hostCreateThread(&rt.releaseWatcherThread, releaseWatcherMain, nullptr) == 0;
    return rt.releaseWatcherStarted;
}

void stopReleaseWatcher() {
    RuntimeState& rt = *gRuntime;
    if (!rt.releaseWatcherStarted) return;
    rt.releaseWatcherInterrupt.fetch_add(1, std::memory_order_acq_rel);  // after `stopping`
    futexWake(&rt.releaseWatcherInterrupt, 1);
    hostJoinThread(rt.releaseWatcherThread);
    rt.releaseWatcherStarted = false;
}

}  // namespace arbrt::detail
