// Randomised property tests of allocate() (fixed seeds): random topologies from one core to
// 2 sockets x 64 cores x 2 threads, random requests and random (also invalid) prior grants.
#include <gtest/gtest.h>

#include <random>

#include "arbpolicy/allocation.h"
#include "test_support.h"

namespace arbpolicy {
namespace {

using testing::checkAllocation;
using testing::checkStability;
using testing::describe;
using testing::distinct;
using testing::validHeld;
using Rng = std::mt19937_64;

// Uniform integer in [lo, hi].
uint64_t uniform(Rng& rng, uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
}
bool chance(Rng& rng, double p) {
    return std::bernoulli_distribution(p)(rng);
}

// Cores assigned to sockets at random and cpu ids scattered: nothing like Linux numbering.
Topology scrambledTopology(Rng& rng) {
    const int cores = static_cast<int>(uniform(rng, 1, 24));
    const int sockets = static_cast<int>(uniform(rng, 1, 4));
    std::vector<int> ids(static_cast<size_t>(cores) * 4);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int>(i * 3 + uniform(rng, 0, 2));
    std::shuffle(ids.begin(), ids.end(), rng);
    std::vector<int> coreSocket(cores);
    for (int& s : coreSocket) s = static_cast<int>(uniform(rng, 0, sockets - 1)) * 5;
    Topology t;
    for (int core = 0; core < cores; ++core) {
        int threads = static_cast<int>(uniform(rng, 1, 4));
        for (int i = 0; i < threads; ++i) {
            t.cpus.push_back(Cpu{ids[core * 4 + i], core + 100, coreSocket[core]});
        }
    }
    std::sort(t.cpus.begin(), t.cpus.end(), [](const Cpu& a, const Cpu& b) { return a.id < b.id; });
    return t;
}

// A synthetic machine, a random subset of one (a managed set with holes), or a scrambled one.
Topology randomTopology(Rng& rng, bool large) {
    if (large) return Topology::synthetic(2, 64, 2);
    switch (uniform(rng, 0, 3)) {
        case 0:
            return scrambledTopology(rng);
        case 1: {
            Topology full = Topology::synthetic(static_cast<int>(uniform(rng, 1, 2)),
                                                static_cast<int>(uniform(rng, 1, 8)), 2);
            Topology t;
            for (const Cpu& cpu : full.cpus) {
                if (chance(rng, 0.8)) t.cpus.push_back(cpu);
            }
            return t;
        }
        default:
            return Topology::synthetic(static_cast<int>(uniform(rng, 1, 4)),
                                       static_cast<int>(uniform(rng, 1, 12)),
                                       static_cast<int>(uniform(rng, 1, 4)));
    }
}

// One random request: one to three levels, occasionally huge counts, minimums and caps.
ProcessRequest randomRequest(Rng& rng, ProcessKey key, uint64_t typical, bool withMinimums) {
    ProcessRequest r;
    r.key = key;
    int levels = static_cast<int>(uniform(rng, 1, 3));
    for (int i = 0; i < levels; ++i) {
        uint32_t n =
            chance(rng, 0.03) ? UINT32_MAX : static_cast<uint32_t>(uniform(rng, 0, typical));
        r.requested[uniform(rng, 0, kPriorityLevels - 1)] = n;
    }
    if (withMinimums && chance(rng, 0.3))
        r.minCores = static_cast<uint32_t>(uniform(rng, 1, typical));
    if (chance(rng, 0.3)) r.maxCores = static_cast<uint32_t>(uniform(rng, 0, typical + 1));
    return r;
}

std::vector<ProcessRequest> randomRequests(Rng& rng, size_t capacity, size_t processes,
                                           bool withMinimums) {
    uint64_t typical = 2 * capacity / std::max<size_t>(processes, 1) + 2;
    std::vector<ProcessRequest> r;
    for (size_t i = 0; i < processes; ++i) {
        ProcessKey key = uniform(rng, 1, 3 * processes + 1);  // repeats happen now and then
        r.push_back(randomRequest(rng, key, typical, withMinimums));
    }
    return r;
}

// Prior grants: mostly plausible, sometimes for unknown processes, outside the topology, or
// claiming the same cpu twice.
Grants randomCurrent(Rng& rng, const Topology& t, const std::vector<ProcessRequest>& requests) {
    Grants current;
    if (requests.empty() || chance(rng, 0.15)) return current;
    for (const Cpu& cpu : t.cpus) {
        if (chance(rng, 0.25)) continue;
        ProcessKey key =
            chance(rng, 0.05) ? 999999 : requests[uniform(rng, 0, requests.size() - 1)].key;
        current[key].push_back(cpu.id);
        if (chance(rng, 0.02)) current[requests[0].key].push_back(cpu.id);
    }
    if (chance(rng, 0.1)) current[requests[0].key].push_back(100000);
    for (auto& [key, cpus] : current) std::sort(cpus.begin(), cpus.end());
    return current;
}

// Changes a few requests: different counts, a process leaving, a new one arriving.
std::vector<ProcessRequest> perturb(Rng& rng, std::vector<ProcessRequest> r, size_t capacity) {
    uint64_t typical = 2 * capacity / std::max<size_t>(r.size(), 1) + 2;
    int changes = static_cast<int>(uniform(rng, 1, 3));
    for (int i = 0; i < changes; ++i) {
        uint64_t what = uniform(rng, 0, 2);
        if (what == 0 && !r.empty()) {
            r[uniform(rng, 0, r.size() - 1)].requested[uniform(rng, 0, kPriorityLevels - 1)] =
                static_cast<uint32_t>(uniform(rng, 0, typical));
        } else if (what == 1 && !r.empty()) {
            r.erase(r.begin() + static_cast<long>(uniform(rng, 0, r.size() - 1)));
        } else {
            r.push_back(randomRequest(rng, uniform(rng, 1, 1000), typical, true));
        }
    }
    return r;
}

// Reference counts by the definition (no minimums): at each level, hand out one core at a time to
// the unsatisfied process that has the fewest at this level, ties to the one holding more beyond
// its higher-level cores, then the smaller key.
std::map<ProcessKey, uint64_t> referenceTotals(size_t capacity,
                                               const std::vector<ProcessRequest>& requests,
                                               const Grants& held) {
    std::map<ProcessKey, ProcessRequest> byKey = distinct(requests);
    std::map<ProcessKey, uint64_t> total;
    uint64_t remaining = capacity;
    for (int level = 0; level < kPriorityLevels; ++level) {
        std::map<ProcessKey, uint64_t> demand, got;
        std::map<ProcessKey, int64_t> excess;
        for (const auto& [key, r] : byKey) {
            demand[key] = std::min<uint64_t>(
                r.requested[level], r.maxCores - std::min<uint64_t>(total[key], r.maxCores));
            got[key] = 0;
            auto it = held.find(key);
            excess[key] = static_cast<int64_t>(it == held.end() ? 0 : it->second.size()) -
                          static_cast<int64_t>(total[key]);
        }
        while (remaining > 0) {
            ProcessKey best = 0;
            bool found = false;
            for (const auto& [key, d] : demand) {
                if (got[key] >= d) continue;
                bool better = !found || got[key] < got[best] ||
                              (got[key] == got[best] && excess[key] > excess[best]);
                if (better) best = key, found = true;
            }
            if (!found) break;
            ++got[best];
            --remaining;
        }
        for (const auto& [key, n] : got) total[key] += n;
    }
    return total;
}

// Cores shared by two processes (a half-used core each side).
size_t splitCores(const Topology& t, const Grants& grants) {
    std::map<int, std::set<ProcessKey>> owners;
    std::map<int, int> coreOf;
    for (const Cpu& cpu : t.cpus) coreOf[cpu.id] = cpu.core;
    for (const auto& [key, cpus] : grants) {
        for (int id : cpus) owners[coreOf[id]].insert(key);
    }
    return std::count_if(owners.begin(), owners.end(),
                         [](const auto& o) { return o.second.size() > 1; });
}

// The per-iteration checks: rules, stability from the prior grants, idempotence, the reported
// shares, and then the same after a random change of the requests.
void checkOne(Rng& rng, const Topology& t, const std::vector<ProcessRequest>& r,
              const Grants& current, uint64_t iteration) {
    Allocation a = allocateDetailed(t, r, current);
    const Grants& g = a.grants;
    ASSERT_EQ(checkAllocation(t, r, g), "") << "iteration " << iteration << ": " << describe(g);
    ASSERT_EQ(checkStability(t, r, current, g), "") << "iteration " << iteration;
    ASSERT_EQ(allocate(t, r, g), g) << "iteration " << iteration << ": not stable\n"
                                    << describe(r) << "current " << describe(current);
    for (const auto& [key, cpus] : g) {
        ASSERT_EQ(a.shares[key].total, cpus.size()) << "iteration " << iteration;
        std::vector<uint64_t> levels = testing::attribute(distinct(r)[key], cpus.size());
        for (int l = 0; l < kPriorityLevels; ++l) ASSERT_EQ(a.shares[key].perLevel[l], levels[l]);
    }
    std::vector<ProcessRequest> changed = perturb(rng, r, t.cpus.size());
    Grants next = allocate(t, changed, g);
    ASSERT_EQ(checkAllocation(t, changed, next), "") << "iteration " << iteration << " (changed)";
    ASSERT_EQ(checkStability(t, changed, g, next), "") << "iteration " << iteration << " (changed)";
    ASSERT_EQ(allocate(t, changed, next), next) << "iteration " << iteration << " (changed)\n"
                                                << describe(changed) << "from " << describe(g);
}

TEST(AllocateProperty, RandomSmallMachines) {
    Rng rng(12345);
    for (uint64_t i = 0; i < 4000; ++i) {
        Topology t = randomTopology(rng, false);
        auto r = randomRequests(rng, t.cpus.size(), uniform(rng, 0, 12), true);
        Grants current = randomCurrent(rng, t, r);
        checkOne(rng, t, r, current, i);
        if (HasFatalFailure()) return;
    }
}

TEST(AllocateProperty, RandomLargeMachine) {
    Rng rng(777);
    for (uint64_t i = 0; i < 300; ++i) {
        Topology t = randomTopology(rng, true);
        auto r = randomRequests(rng, t.cpus.size(), uniform(rng, 1, 200), true);
        Grants current = randomCurrent(rng, t, r);
        checkOne(rng, t, r, current, i);
        if (HasFatalFailure()) return;
    }
}

TEST(AllocateProperty, CountsMatchReferenceWithoutMinimums) {
    Rng rng(4242);
    for (uint64_t i = 0; i < 2000; ++i) {
        Topology t = randomTopology(rng, i % 20 == 0);
        auto r = randomRequests(rng, t.cpus.size(), uniform(rng, 0, i % 20 == 0 ? 100 : 10), false);
        Grants current = randomCurrent(rng, t, r);
        Grants g = allocate(t, r, current);
        std::map<ProcessKey, uint64_t> expected =
            referenceTotals(t.cpus.size(), r, validHeld(t, r, current));
        for (const auto& [key, cpus] : g) {
            ASSERT_EQ(cpus.size(), expected[key]) << "iteration " << i << " process " << key;
        }
    }
}

TEST(AllocateProperty, FreshAllocationSplitsFewCores) {
    // Starting from nothing, with two threads per core, a process splits a core with another only
    // for an odd share, or where it spills over to another socket (a half core at each end).
    Rng rng(99);
    for (uint64_t i = 0; i < 1000; ++i) {
        Topology t = Topology::synthetic(static_cast<int>(uniform(rng, 1, 3)),
                                         static_cast<int>(uniform(rng, 1, 16)), 2);
        auto r = randomRequests(rng, t.cpus.size(), uniform(rng, 1, 16), true);
        Grants g = allocate(t, r, {});
        std::map<int, int> socketOf;
        for (const Cpu& cpu : t.cpus) socketOf[cpu.id] = cpu.socket;
        size_t allowed = 0;
        for (const auto& [key, cpus] : g) {
            std::set<int> sockets;
            for (int id : cpus) sockets.insert(socketOf[id]);
            allowed += cpus.size() % 2 + (sockets.empty() ? 0 : sockets.size() - 1);
        }
        ASSERT_LE(splitCores(t, g), allowed) << "iteration " << i << ": " << describe(g);
    }
}

TEST(AllocateProperty, RepeatedChangesNeverMoveWithoutCause) {
    // A long random walk: requests change a little each step, each step starts from the last
    // grants.
    Rng rng(2024);
    Topology t = Topology::synthetic(2, 16, 2);
    std::vector<ProcessRequest> r = randomRequests(rng, t.cpus.size(), 12, true);
    Grants g = allocate(t, r, {});
    for (uint64_t step = 0; step < 2000; ++step) {
        std::vector<ProcessRequest> changed = perturb(rng, r, t.cpus.size());
        Grants next = allocate(t, changed, g);
        ASSERT_EQ(checkAllocation(t, changed, next), "") << "step " << step;
        ASSERT_EQ(checkStability(t, changed, g, next), "") << "step " << step;
        ASSERT_EQ(allocate(t, changed, next), next) << "step " << step;
        r = std::move(changed);
        g = std::move(next);
    }
}

}  // namespace
}  // namespace arbpolicy
