// Turning an estimator's proposal into a Decision within the process's core limits; deadlines.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "arbrt/policy/estimator.h"

namespace arbrt::policy::detail {

// Clamps `proposal` (a count the reason asks for; may be below 0 or above maxCores as int64) to
// [minCores, maxCores] and fills the decision's count and clamped flag. Estimators propose relative
// to the cores granted, so the result never runs away while a request is in flight.
inline void settle(int64_t proposal, const CoreLimits& limits, Decision* decision) {
    const int64_t lo = limits.minCores;
    const int64_t hi = limits.maxCores;
    decision->clamped = proposal < lo || proposal > hi;
    decision->cores = static_cast<uint32_t>(std::clamp(proposal, lo, hi));
}

// a + b without wrapping, for deadlines near the end of the timeline.
inline uint64_t saturatingAdd(uint64_t a, uint64_t b) {
    return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max()
                                                        : a + b;
}

}  // namespace arbrt::policy::detail
