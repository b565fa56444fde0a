// The core estimator's interface: per-core counters sampled by the runtime go in, the number of
// cores the process wants (and why) comes out. Estimators are pure policy objects: no threads, no
// clocks, no sockets. Every sample carries its own time (nowNs), so the same trace always gives the
// same decisions and tests replay traces as data.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace arbrt::policy {

// Core ids are in [0, kMaxCoreIds): the runtime's core numbers (arbrt::kMaxCores, checked by a
// test). Counters of a core with a larger id are ignored.
constexpr int kMaxCoreIds = 256;

// One granted core's counters, as the runtime keeps them. Every field is cumulative since the
// runtime made the core and never decreases (a counter that does go back, e.g. after the runtime
// was rebuilt in a fork child, makes that core start afresh); the estimator takes differences
// between consecutive samples itself, so a sample the runtime skips loses nothing. Counters must be
// current to the sample: busyNs and runnableNs include the part of a run still in progress, so a
// thread computing for a whole window without a switch counts as busy. A plain value.
struct CoreCounters {
    int coreId = 0;           // the runtime's core number; stable across grants and releases
    uint64_t grantedNs = 0;   // time the core was granted to the process ("total")
    uint64_t busyNs = 0;      // of which it ran user threads (<= grantedNs over any interval)
    uint64_t runnableNs = 0;  // integral over granted time of the number of runnable threads on the
                              // core, counting the running one (thread-nanoseconds): Arachne's
                              // load-factor numerator. Integrated, not sampled: a sample
                              // every few us would alias with dispatching, and the integral
                              // costs one multiply-add per switch
    // Shenango's congestion signal as two sequence numbers of the core's set of runnable threads
    // that wait to run (its queue, and any run-next slot): threads that entered it, and threads
    // that left it (to run here, stolen, migrated). dequeued <= enqueued; enqueued - dequeued is
    // the number waiting now. A thread that waited at check k is still waiting at check k+1 exactly
    // when dequeued(k+1) < enqueued(k) if threads leave in arrival order; a thread that overtakes
    // (run-next) can hide an older waiter for one more check, never invent one.
    uint64_t enqueued = 0;
    uint64_t dequeued = 0;
};

// What the runtime feeds an estimator: one entry per core granted at nowNs, in any order, ids
// distinct (a repeated id is counted once). No entry means not granted; an empty span means no core
// is granted. nowNs is on any monotonic timeline shared by all samples; a sample older than the
// previous one is ignored. The span is only read during onSample (not kept).
struct CoreSample {
    uint64_t nowNs = 0;
    std::span<const CoreCounters> cores;
};

// Why an estimator wants what it wants; for tracing.
enum class Reason : uint8_t {
    hold,                // not a decision point (mid-window, between checks, first sample): the
                         // count is the last one wanted (at the first sample: the cores granted)
    steady,              // a decision point that found no cause to change the count
    loadFactorHigh,      // Arachne: the window's average load factor exceeded the threshold: +1
    utilisationLow,      // Arachne, and fast over its utilisation window: the window's work
                         // fits in one core fewer, with hysteresis (fast: margin): -1
    queuedAcrossChecks,  // fast: a runnable thread waited across two consecutive checks: +1
    coreIdle,            // fast: cores idle for the grace period are given back
};

// One estimator output. `cores` is what the process should ask the arbiter for from now on, always
// within [minCores, maxCores]. A plain value.
struct Decision {
    uint32_t cores = 0;    // cores wanted
    uint32_t granted = 0;  // cores in the sample it was decided on
    Reason reason = Reason::hold;
    bool clamped = false;  // the reason asked for a count outside [minCores, maxCores]
    int coreId = -1;       // the core the reason is about (waiting or idle core), or -1
    double measured = 0;   // the value behind the reason (load factor, utilisation, ns waited/idle)
    double limit = 0;      // what it was compared with

    friend bool operator==(const Decision&, const Decision&) = default;
};

// The process's bounds on its core count (arbrun --cores MIN:MAX). A plain value.
struct CoreLimits {
    uint32_t minCores = 1;
    uint32_t maxCores = kMaxCoreIds;
};

// The estimator interface the runtime's core policy drives. Not thread-safe: one caller at a time
// (the runtime's policy thread), which also owns the object.
class CoreEstimator {
  public:
    virtual ~CoreEstimator() = default;

    // Feeds one sample; returns the cores wanted from now on and why. Cheap and allocation-free, so
    // the runtime may call it every few microseconds.
    virtual Decision onSample(const CoreSample& sample) = 0;
    // When the next decision point falls (end of the window, next check): sampling earlier only
    // returns `hold`. Before the first sample: 0 (sample at once).
    virtual uint64_t nextDecisionNs() const = 0;
    // Cores wanted now: the last decision's count; after the first sample (which decides nothing)
    // the cores granted then, clamped to the limits; minCores before any sample.
    virtual uint32_t wantedCores() const = 0;
    // Short name for logs and traces ("arachne", "fast").
    virtual std::string_view name() const = 0;
};

// The reason's name for traces: "loadFactorHigh", ...
std::string_view toString(Reason reason);
// One line for a trace: "2 -> 3 cores: load factor 1.73 > 1.50".
std::string describe(const Decision& decision);
// Why `limits` is not usable (1 <= minCores <= maxCores <= kMaxCoreIds), or nullopt.
std::optional<std::string> validate(const CoreLimits& limits);

}  // namespace arbrt::policy
