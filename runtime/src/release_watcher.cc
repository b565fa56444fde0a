// Fast release (arbiter mode): the dispatcher notices "give core k back" at its next pass, but a
// user thread that computes without calling the runtime would hold the core until the arbiter's
// forced reclaim. A kernel thread sleeps on the arbiter's release wake-ups instead; for each core
// asked back it wakes the core's carrier (idle or parked: it looks at once) and asks the running
// thread to yield now (preemption at a safe point), so the dispatcher releases the core within
// microseconds.
#include "release_watcher.h"

#include "preempt.h"
#include "runtime_state.h"

namespace arbrt::detail {
namespace {

constexpr uint64_t kIdleWaitNs = 5'000'000;  // bounds stop() and a reconnect's page swap
constexpr uint64_t kRetryNs = 50'000;        // while a release is pending (unsafe point, race)

// One look at every core granted by the arbiter. Returns whether a release is still pending.
bool actOnReleaseRequests() {
    RuntimeState& rt = *gRuntime;
    bool pending = false;
    for (int i = 0; i < rt.numCores; ++i) {
        Core* core = &rt.cores[i];
        Carrier* c = core->carrier.load(std::memory_order_acquire);
        if (!c) continue;
        // Racy reads of fields the carrier writes: a stale value costs one needless wake-up or
        // one retry kRetryNs later.
        const int cpu = __atomic_load_n(&c->arbiterCpu, __ATOMIC_RELAXED);
        if (cpu < 0 || !rt.provider->mustReleaseCore(cpu)) continue;
        pending = true;
        wakeCarrier(core);
        if (core->blockingSince.load(std::memory_order_relaxed) == 0 &&
            __atomic_load_n(&c->current, __ATOMIC_RELAXED) != nullptr) {
            requestPreemption(core, core->contextSwitches.load(std::memory_order_relaxed));
        }
    }
    return pending;
}

void* releaseWatcherMain(void*) {
    RuntimeState& rt = *gRuntime;
    uint32_t seen = 0;
    bool pending = false;
    while (!rt.stopping.load(std::memory_order_acquire)) {
        rt.provider->waitForReleaseRequests(&seen, pending ? kRetryNs : kIdleWaitNs);
        if (rt.stopping.load(std::memory_order_acquire)) break;
        pending = actOnReleaseRequests();
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
    hostJoinThread(rt.releaseWatcherThread);  // it sees `stopping` within kIdleWaitNs
    rt.releaseWatcherStarted = false;
}

}  // namespace arbrt::detail
