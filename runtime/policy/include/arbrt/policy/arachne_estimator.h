// Arachne's core estimator (OSDI '18): measure per-core utilisation and load factor over a window,
// add a core when the average load factor is high, give one back when the window's work would fit
// in one core fewer with hysteresis. At most one change per window.
//
// Exactly what it does, for a window of `windowNs` measured on one unchanged set of n granted
// cores:
//   u  = sum(busy) / sum(granted)         mean utilisation of the granted cores
//   lf = sum(runnable) / sum(granted)     mean load factor: runnable threads, counting the running
//                                         one, averaged over the cores' granted time
//   U  = u * n                            the window's work, in cores' worth
// Scale up (n + 1) when lf > loadFactorThreshold; the U seen then is remembered as up[n], "the work
// at which n cores were not enough".
// Otherwise, with n >= 2 and m = n - 1, scale down (m) when the projected utilisation of the m
// remaining cores, U / m, is below
//   ceiling = min(1 - hysteresis, up[m] / m - hysteresis)   (the second term only if up[m] exists)
// and never below kIdleUtilisation (so a process that went idle always shrinks, however low up[m]
// was). The first term is "the work fits in one core fewer, each below 100% - hysteresis"; the
// second is Arachne's own rule (its CoreLoadEstimator remembers the utilisation at each scale-up
// and scales down only below it minus a hysteresis): a load that needed n cores because its
// threads queued (lf high) at utilisation up[m] is not moved back to m cores until its work has
// dropped clearly below that level, so a load hovering at the boundary does not flap. Both terms
// are per-core utilisations of the m cores, so the hysteresis reads the same way in each.
//
// Unlike Arachne, the record up[m] expires. Why: a scale-up at low utilisation (a start-up burst
// of thread creation: many runnable threads for a few milliseconds at ~5% of a core) leaves
// up[m] / m - hysteresis below zero, and Arachne's rule then keeps the n-th core for as long as
// the process does any work at all. The record is evidence that m cores made threads queue; it is
// stale once the load it was made for is gone, and the load factor says when: a window at n cores
// is *quiet* when its runnable threads would fit m cores with none waiting on average,
//   lf * n / m <= kQuietLoadFactor (1.0: well below any threshold, which is > 1).
// After kRecordLifetimeWindows consecutive quiet windows at n cores the record up[m] is dropped, if
// it was made at a per-core utilisation below kExpirableUtilisation
// (the down rule then uses 1 - hysteresis alone). A hovering load that needs n cores because its
// threads queue has lf * n / m near or above the threshold, so it is never quiet and its record
// stands (the anti-flapping property is kept). The projection lf * n / m only counts the threads
// already runnable; with fewer cores they queue longer (nonlinearly near saturation), so a load
// can look quiet at n cores and still scale up again at m. Each time a record is made again for
// an m whose previous record expired, that m's lifetime doubles (up to
// kMaxRecordLifetimeWindows), so such a load moves at most a logarithmic number of times before
// it settles (once per 12.8 s at the cap with the default window).
// Otherwise hold the count. Decisions are relative to the cores granted (n), not to the last one
// wanted, so a request the arbiter has not met yet is repeated, never compounded.
//
// Windows: the first sample starts one (and its granted count, clamped, becomes the count wanted);
// a sample whose cores differ from the previous sample's (a grant or a reclaim) restarts it there,
// so a window always measures one set of cores and the effect of a change is measured before the
// next decision; a decision ends the window at its sample and the next one starts there.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "arbrt/policy/estimator.h"

namespace arbrt::policy {

namespace detail {
class CoreHistory;
}

// Settings of the Arachne estimator. A plain value; check with validate() before use.
struct ArachneParams {
    CoreLimits limits;
    uint64_t windowNs = 50'000'000;    // [1 ms, 60 s]: Arachne's 50 ms
    double loadFactorThreshold = 1.5;  // > 1.0, finite: Arachne's 1.5
    double hysteresis = 0.09;          // in (0, 0.5): Arachne's 9%
};

// Why `params` cannot be used ("arachne estimator: hysteresis 0.6 must be in (0, 0.5) ..."), or
// nullopt.
std::optional<std::string> validate(const ArachneParams& params);

// Projected utilisation below which the remaining cores count as idle: a scale-down is then always
// allowed (Arachne's zeroCoreUtilizationThreshold, per remaining core).
constexpr double kIdleUtilisation = 0.01;
// Load factor at or below which a window's runnable threads, projected onto one core fewer
// (lf * n / m), count as quiet: no thread would wait on average. A scale-up record expires after
// enough quiet windows (file comment).
constexpr double kQuietLoadFactor = 1.0;
// Only a record made at a per-core utilisation below this expires: one made while the m cores were
// at least half busy is evidence of real work queueing (an event-driven server's load factor stays
// near 1 however busy it is, so "quiet" says nothing about it), and Arachne's rule keeps it.
constexpr double kExpirableUtilisation = 0.5;
// Consecutive quiet windows at n cores after which the record up[n - 1] expires at first (200 ms
// with the default 50 ms window: four windows, so one quiet-looking window between bursts does not
// undo a scale-up); doubled each time a record proves wrong, up to the maximum (12.8 s).
constexpr uint32_t kRecordLifetimeWindows = 4;
constexpr uint32_t kMaxRecordLifetimeWindows = 256;

// See the file comment. Not thread-safe (CoreEstimator).
class ArachneEstimator final : public CoreEstimator {
  public:
    // Throws std::invalid_argument with validate()'s message when `params` is not valid.
    explicit ArachneEstimator(const ArachneParams& params);
    ~ArachneEstimator() override;

    Decision onSample(const CoreSample& sample) override;
    uint64_t nextDecisionNs() const override;
    uint32_t wantedCores() const override { return wanted_; }
    std::string_view name() const override { return "arachne"; }

  private:
    // What the estimator remembers about the last scale-up from m cores (index m). A plain value.
    struct ScaleUpRecord {
        double work =
            -1;  // up[m]: the work U (cores' worth) of that window; < 0: none (or expired)
        uint32_t lifetimeWindows = kRecordLifetimeWindows;  // quiet windows that expire it
        bool expired = false;  // an earlier record for m expired (a new one means it was wrong)
    };

    Decision decide(uint32_t granted);
    void recordScaleUp(uint32_t granted, double work);
    double scaleDownCeiling(uint32_t granted, double loadFactor);
    void restartWindow(uint64_t nowNs);

    ArachneParams params_;
    std::unique_ptr<detail::CoreHistory> history_;
    uint32_t wanted_;
    bool started_ = false;
    uint64_t lastNowNs_ = 0;
    uint64_t windowStartNs_ = 0;
    // The window's sums over its cores (nanoseconds; runnable in thread-nanoseconds).
    uint64_t grantedSum_ = 0;
    uint64_t busySum_ = 0;
    uint64_t runnableSum_ = 0;
    // By core count m: the last scale-up from m cores (up[m]) and how long it lasts.
    std::array<ScaleUpRecord, kMaxCoreIds + 1> scaleUps_;
    // Consecutive quiet windows decided at quietCores_ cores (a window at another count restarts
    // the run).
    uint32_t quietWindows_ = 0;
    uint32_t quietCores_ = 0;
};

}  // namespace arbrt::policy
