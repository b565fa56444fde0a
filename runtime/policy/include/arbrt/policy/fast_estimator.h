// The fast core estimator (Shenango's idea, NSDI '19): check every few microseconds whether a
// runnable thread has waited across two consecutive checks, and ask for one more core at once if
// so; give back a core that has stayed idle for a grace period.
//
// Exactly what it does. A sample is a check when at least periodNs have passed since the previous
// check (the first sample is one; samples in between return `hold` and are otherwise ignored, so
// the runtime may sample as often as it likes). Per core present at both checks k and k+1:
//   waited:  enqueued(k) > dequeued(k)  (threads waited at k)  and  dequeued(k+1) < enqueued(k)
//            (not all of them have left): a thread has waited at least one period.
//   idle:    between k and k+1 the core ran nothing (busy unchanged), no thread arrived and none
//            waits at k+1. A core's idle streak starts at the first check of an idle interval and
//            ends at any interval that is not idle.
// Then, with n cores in the sample:
//   - cores whose idle streak has lasted idleGraceNs -> n minus their number (coreId: the longest
//     idle), all at once: each one is provably unneeded, and giving them back one per check would
//     only delay it;
//   - else, a core waited and no core was idle over the interval -> n + 1 (coreId: the core with
//     most threads waiting across the checks). A core that sat idle through the same interval
//     could not take the waiting thread (its class or affinity keeps it where it is, or stealing
//     has not run yet), so another core would sit idle too: the request waits for a check at which
//     no core idles (or for that core to be given back). Without this, threads pinned to one core
//     would draw cores up to maxCores and keep them;
//   - else hold the count.
// Decisions are relative to the granted count, so checks repeated while a request is in flight
// repeat it instead of compounding it; the result is clamped to [minCores, maxCores]. The first
// sample only adopts the granted count (clamped) as the count wanted.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arbrt/policy/estimator.h"

namespace arbrt::policy {

namespace detail {
class CoreHistory;
}

// Settings of the fast estimator. A plain value; check with validate() before use.
//
// Why a 250 us grace by default: a core given back and asked for again costs two arbiter round
// trips and two moves of a kernel thread between cpusets, tens of microseconds or more each, and
// the fast path asks for a core as soon as one thread waits for one period. A grace of about 25
// periods keeps a core that only idles between requests arriving every hundred microseconds or so,
// yet returns a truly idle core 200 times sooner than Arachne's 50 ms window. It must cover at
// least two checks: idleness is only seen at the check that ends an idle interval.
struct FastParams {
    CoreLimits limits;
    uint64_t periodNs = 10'000;      // [5 us, 50 ms]: Shenango checks every 5 us, Caladan 10 us
    uint64_t idleGraceNs = 250'000;  // [2 * periodNs, 60 s]
};

// Why `params` cannot be used ("fast estimator: check period 1 us must be in [5 us, 50 ms] ..."),
// or nullopt.
std::optional<std::string> validate(const FastParams& params);

// See the file comment. Not thread-safe (CoreEstimator).
class FastEstimator final : public CoreEstimator {
  public:
    // Throws std::invalid_argument with validate()'s message when `params` is not valid.
    explicit FastEstimator(const FastParams& params);
    ~FastEstimator() override;

    Decision onSample(const CoreSample& sample) override;
    uint64_t nextDecisionNs() const override;
    uint32_t wantedCores() const override { return wanted_; }
    std::string_view name() const override { return "fast"; }

  private:
    static constexpr uint64_t kNotIdle = ~uint64_t{0};

    FastParams params_;
    std::unique_ptr<detail::CoreHistory> history_;
    uint32_t wanted_;
    bool started_ = false;
    uint64_t lastNowNs_ = 0;
    uint64_t lastCheckNs_ = 0;
    // By core id: the check at which the core's current idle streak began, or kNotIdle.
    std::vector<uint64_t> idleSinceNs_;
};

}  // namespace arbrt::policy
