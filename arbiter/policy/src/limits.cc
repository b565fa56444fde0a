// Applying the limits file: which entry applies to a peer, and clamping its request.
#include <algorithm>
#include <utility>

#include "arbpolicy/limits.h"

namespace arbpolicy {
namespace {

// Setting by setting, the more permissive of two limits.
Limit mostPermissive(const Limit& a, const Limit& b) {
    return Limit{std::min(a.bestPriority, b.bestPriority), std::max(a.maxCores, b.maxCores)};
}

// Moves cores asked at levels better than `best` down to `best` (saturating). Returns how many
// moved.
uint64_t lowerPriority(int best, ProcessRequest* request) {
    uint64_t moved = 0;
    for (int level = 0; level < best; ++level) {
        moved += request->requested[level];
        request->requested[level] = 0;
    }
    uint64_t total = request->requested[best] + moved;
    request->requested[best] = static_cast<uint32_t>(std::min<uint64_t>(total, UINT32_MAX));
    return moved;
}

// Appends one clause to the log line.
void note(std::string* why, const std::string& clause) {
    if (!why->empty()) *why += "; ";
    *why += clause;
}

}  // namespace

// Root is only limited when an entry names it (or one of its groups): the default is for everyone
// else.
Limit LimitsConfig::limitFor(uid_t uid, const std::vector<gid_t>& gids) const {
    if (auto it = users.find(uid); it != users.end()) return it->second;
    std::optional<Limit> fromGroups;
    for (gid_t gid : gids) {
        auto it = groups.find(gid);
        if (it == groups.end()) continue;
        fromGroups = fromGroups ? mostPermissive(*fromGroups, it->second) : it->second;
    }
    if (fromGroups) return *fromGroups;
    if (uid != 0 && defaultLimit) return *defaultLimit;
    return Limit{};
}

// Priority first (it moves cores between levels), then the caps. A bestPriority outside 0..7 is
// treated as the nearest level, so a hand-built Limit cannot index out of range.
bool LimitsConfig::clamp(const Limit& limit, ProcessRequest* request, std::string* why) const {
    std::string log;
    const int best = std::clamp(limit.bestPriority, 0, kPriorityLevels - 1);
    if (uint64_t moved = lowerPriority(best, request); moved > 0) {
        note(&log, std::to_string(moved) + " cores asked above priority " + std::to_string(best) +
                       " moved to priority " + std::to_string(best));
    }
    if (request->maxCores > limit.maxCores) {
        note(&log, "max-cores " + std::to_string(request->maxCores) + " lowered to " +
                       std::to_string(limit.maxCores));
        request->maxCores = limit.maxCores;
    }
    if (request->minCores > request->maxCores) {
        note(&log, "min-cores " + std::to_string(request->minCores) + " lowered to " +
                       std::to_string(request->maxCores));
        request->minCores = request->maxCores;
    }
    if (log.empty()) return false;
    if (why) *why = std::move(log);
    return true;
}

}  // namespace arbpolicy
