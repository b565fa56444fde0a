// The set-up the estimator tests share: parameters with a test's core limits, and one call from a
// text trace (trace.h) or a demand trace (sim.h) to what the estimator decided, so a test is its
// trace and its expected decisions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "arbrt/policy/arachne_estimator.h"
#include "arbrt/policy/fast_estimator.h"
#include "sim.h"
#include "trace.h"

namespace arbrt::policy::testing {

constexpr uint64_t kUs = 1'000;
constexpr uint64_t kMs = 1'000'000;

// Arachne's defaults (50 ms window, load factor 1.5, hysteresis 9%) with the given core limits.
inline ArachneParams arachneParams(uint32_t minCores, uint32_t maxCores) {
    ArachneParams p;
    p.limits = {minCores, maxCores};
    return p;
}

// The fast estimator's defaults (10 us checks, 250 us grace) with the given core limits and,
// where a test wants shorter traces, another grace.
inline FastParams fastParams(uint32_t minCores, uint32_t maxCores,
                             uint64_t idleGraceNs = FastParams{}.idleGraceNs) {
    FastParams p;
    p.limits = {minCores, maxCores};
    p.idleGraceNs = idleGraceNs;
    return p;
}

// The decision points of `estimator` on the text trace (decisionPoints()).
inline std::string pointsOf(CoreEstimator& estimator, std::string_view trace) {
    return decisionPoints(replay(estimator, traceOf(trace)));
}

// The changes of the count wanted on the text trace after its first sample (changes(); the first
// sample only adopts the cores it holds).
inline std::string changesOf(CoreEstimator& estimator, std::string_view trace) {
    const std::vector<Timed> decisions = replay(estimator, traceOf(trace));
    return decisions.empty() ? "" : changes(decisions, decisions.front().decision.cores);
}

// The grants of a closed-loop run on the demand trace, sampled every stepNs (SimResult::grants).
inline std::string grantsOf(CoreEstimator& estimator, std::string_view demand, uint64_t stepNs) {
    return simulate(estimator, demandOf(demand), stepNs).grants;
}

}  // namespace arbrt::policy::testing
