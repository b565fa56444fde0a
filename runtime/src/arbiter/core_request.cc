// The arbiter request from thread classes (the rule is in core_request.h).
#include "arbiter/core_request.h"

#include <algorithm>

namespace arbrt::detail {

CoreRequest computeCoreRequest(const RequestInputs& in) {
    const int lowest = arbclient::kPriorityLevels - 1;
    const int level = std::clamp(in.priority, 0, lowest);
    const int batchLevel = std::min(level + 1, lowest);
    const uint32_t maxCores = std::max<uint32_t>(in.maxCores, 1);
    const uint32_t exclusive = std::min(in.exclusiveThreads, maxCores - 1);
    const uint32_t pool = std::clamp<uint32_t>(in.poolDemand, 1, maxCores - exclusive);
    uint32_t normal = pool, batchOnly = 0;
    if (in.batchThreads != 0) {
        normal = std::min(pool, in.normalThreads);
        batchOnly = std::min(pool - normal, in.batchThreads);
    }
    CoreRequest out;
    out.perPriority[size_t(level)] += exclusive + normal;
    out.perPriority[size_t(batchLevel)] += batchOnly;
    out.minCores = std::min(in.minCores, maxCores);
    out.maxCores = maxCores;
    return out;
}

}  // namespace arbrt::detail
