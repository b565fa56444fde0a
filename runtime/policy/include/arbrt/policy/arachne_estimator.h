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
    Decision decide(uint32_t granted);
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
    // up[n]: the work U (cores' worth) of the window that scaled up from n cores; < 0: none yet.
    std::array<double, kMaxCoreIds + 1> workAtScaleUp_;
};

}  // namespace arbrt::policy
