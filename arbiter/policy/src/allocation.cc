// allocate(): adopt what is held, count, place.
#include <algorithm>

#include "arbpolicy/allocation.h"
#include "machine_index.h"
#include "placement.h"

namespace arbpolicy {
namespace {

// The distinct keys of the requests, ascending.
std::vector<ProcessKey> requestKeys(const std::vector<ProcessRequest>& requests) {
    std::vector<ProcessKey> keys;
    keys.reserve(requests.size());
    for (const ProcessRequest& request : requests) keys.push_back(request.key);
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    return keys;
}

}  // namespace

// Counting only sees how many cpus each process validly holds (for tie-breaks); placement sees
// which ones. Keys, slots and shares are all in key order.
Allocation allocateDetailed(const Topology& managed, const std::vector<ProcessRequest>& requests,
                            const Grants& current, const OddCoreTurns& turns) {
    const detail::MachineIndex machine(managed);
    const std::vector<ProcessKey> keys = requestKeys(requests);
    detail::Placer placer(machine, keys);
    std::vector<uint32_t> heldCounts = placer.adopt(current);
    std::map<ProcessKey, uint32_t> held;
    for (size_t i = 0; i < keys.size(); ++i) held.emplace_hint(held.end(), keys[i], heldCounts[i]);
    Allocation allocation;
    allocation.shares = computeShares(static_cast<uint32_t>(machine.cpus()), requests, held, turns);
    std::vector<uint32_t> targets;
    targets.reserve(keys.size());
    for (const auto& [key, share] : allocation.shares) targets.push_back(share.total);
    allocation.grants = placer.place(targets);
    return allocation;
}

// The daemon's entry point: allocateDetailed() without the shares.
Grants allocate(const Topology& managed, const std::vector<ProcessRequest>& requests,
                const Grants& current) {
    return allocateDetailed(managed, requests, current).grants;
}

}  // namespace arbpolicy
