// Core estimation (rules in estimation.h; the estimators' contract in arbrt/policy/estimator.h).
//
// The estimator wants cumulative counters per granted core. The runtime keeps two on its hot
// paths: threadStarts (each thread switched in on the core, owner-only) and the idle accounting
// (idleTicks + the current idle stretch, exact at any moment). Everything else is integrated here,
// between samples: granted time while the core is active, busy = granted - idle, runnable
// thread-time = busy + (threads waiting at the previous sample) x elapsed, and the waiting set's
// sequence numbers: dequeued = thread starts, enqueued = starts + threads waiting now. Threads
// stolen from a core are not counted as leaving it; that can only make it look congested while a
// thief (an idle core) exists, and the fast estimator never asks for a core while one idles.
#include "arbiter/estimation.h"

#include <algorithm>
#include <vector>

#include "arbiter/request_sender.h"
#include "arbrt/time.h"
#include "platform/arch.h"
#include "sched/runtime_state.h"

namespace arbrt::detail {
namespace {

constexpr uint64_t kMaxGapNs = 5'000'000;    // integrals stay fine-grained between decisions
constexpr uint64_t kQuietGapNs = 1'000'000;  // fast estimator while no thread waits anywhere

// Per core, what the sampler integrates (monitor-only).
struct CoreIntegrals {
    bool wasActive = false;
    uint64_t lastIdleTicks = 0;
    uint32_t lastWaiting = 0;
    policy::CoreCounters counters;
};

// The sampler's state (monitor-only after startEstimation()).
struct Estimation {
    std::vector<CoreIntegrals> cores;
    std::vector<policy::CoreCounters> sample;  // reused: onSample must not allocate, nor we
    uint64_t lastNs = 0;
    uint64_t nextNs = 0;
    std::atomic<uint32_t> requested{0};  // written by the monitor, read by the request sender
    bool anyWaiting = false;
    bool atRestAtFloor = false;  // estimationWaitsForActivity()
};
Estimation* gEstimation = nullptr;

// Threads waiting to run on the core: its queue, its runNext slot, and (at least one) thread whose
// timer is due but not fired yet: a runner that computes keeps its dispatcher from firing timers,
// and such a thread waits for the core as surely as a queued one.
uint32_t waitingOn(const Core& core, uint64_t tsc) {
    return core.queued.load(std::memory_order_relaxed) +
           (core.runNext.load(std::memory_order_relaxed) ? 1 : 0) +
           (core.nextDeadlineTsc.load(std::memory_order_relaxed) <= tsc ? 1 : 0);
}

// Advances one core's integrals to now; returns whether it is granted (active) now.
bool integrate(const Core& core, CoreIntegrals& c, uint64_t elapsedNs, uint64_t tsc) {
    const bool active = core.active.load(std::memory_order_relaxed);
    const uint64_t idle = idleTicksNow(core, tsc);
    const uint64_t idleNs = ticksToNs(idle - std::min(idle, c.lastIdleTicks));
    c.lastIdleTicks = idle;
    if (c.wasActive && active) {
        const uint64_t busyNs = elapsedNs - std::min(elapsedNs, idleNs);
        c.counters.grantedNs += elapsedNs;
        c.counters.busyNs += busyNs;
        c.counters.runnableNs += busyNs + uint64_t(c.lastWaiting) * elapsedNs;
    }
    const uint32_t waiting = waitingOn(core, tsc);
    c.counters.dequeued = core.threadStarts.load(std::memory_order_relaxed);
    c.counters.enqueued = c.counters.dequeued + waiting;
    c.lastWaiting = waiting;
    c.wasActive = active;
    return active;
}

}  // namespace

void startEstimation() {
    RuntimeState& rt = *gRuntime;
    // A fork child inherits its parent's pointer (the parent's sampler, for the parent's cores):
    // forgotten, never used.
    gEstimation = nullptr;
    if (!rt.provider || !rt.options.estimator) return;
    auto* e = new Estimation;
    e->cores.resize(size_t(rt.numCores));
    for (int i = 0; i < rt.numCores; ++i) e->cores[size_t(i)].counters.coreId = i;
    e->sample.reserve(size_t(rt.numCores));
    e->requested.store(rt.options.estimator->wantedCores(), std::memory_order_relaxed);
    gEstimation = e;
}

void stopEstimation() {
    delete gEstimation;
    gEstimation = nullptr;
}

uint64_t estimationTick() {
    Estimation* e = gEstimation;
    if (!e) return ~uint64_t{0};
    RuntimeState& rt = *gRuntime;
    const uint64_t now = nowNs();
    if (now < e->nextNs) return e->nextNs - now;
    const uint64_t elapsed = e->lastNs ? now - e->lastNs : 0;
    const uint64_t tsc = rdtsc();
    e->sample.clear();
    e->anyWaiting = false;
    for (int i = 0; i < rt.numCores; ++i) {
        CoreIntegrals& c = e->cores[size_t(i)];
        if (integrate(rt.cores[i], c, elapsed, tsc)) {
            e->sample.push_back(c.counters);
            e->anyWaiting |= c.lastWaiting != 0;
        }
    }
    e->lastNs = now;
    policy::CoreEstimator& estimator = *rt.options.estimator;
    const policy::Decision d = estimator.onSample({now, e->sample});
    if (d.cores != e->requested.load(std::memory_order_relaxed) &&
        d.reason != policy::Reason::hold) {
        // The pool's demand changed: the request sender recomputes the whole request (thread
        // classes add their cores, core_request.h) and sends it from its own thread.
        e->requested.store(d.cores, std::memory_order_relaxed);
        requestChanged();
    }
    const uint32_t floor = std::clamp<uint32_t>(rt.options.minCores, 1, uint32_t(rt.numCores));
    e->atRestAtFloor = !e->anyWaiting && d.cores <= floor && e->sample.size() <= d.cores;
    // Next sample: the estimator's next decision point, but often enough for the integrals; the
    // fast estimator's microsecond checks only while threads wait somewhere and one more core
    // could be had (fewer granted than carriers). At the most cores a check can only find
    // nothing to do, and waking the monitor every few microseconds costs a CPU's worth of
    // wake-ups: on a host with no CPU to spare it took that CPU from the carriers (bursty at two
    // fixed cores: p99 25 ms with the fast estimator vs 3.5 ms with Arachne's).
    const bool canGrow = e->sample.size() < size_t(rt.numCores);
    uint64_t next = std::min(estimator.nextDecisionNs(), now + kMaxGapNs);
    if (!e->anyWaiting || !canGrow) next = std::max(next, now + kQuietGapNs);
    e->nextNs = std::max(next, now + 1);
    return e->nextNs - now;
}

bool estimationWaitsForActivity() {
    return gEstimation == nullptr || gEstimation->atRestAtFloor;
}

uint32_t estimatedCores() {
    return gEstimation ? gEstimation->requested.load(std::memory_order_relaxed) : 0;
}

}  // namespace arbrt::detail
