// allocate(): placement rules (siblings, sockets, stability) in hand-made scenarios, and every
// small case enumerated exhaustively against the independent checker.
#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "arbpolicy/allocation.h"
#include "test_support.h"

namespace arbpolicy {
namespace {

using testing::checkAllocation;
using testing::checkStability;
using testing::describe;
using testing::request;
using Ids = std::vector<int>;

// The physical cores (by Cpu::core) a set of cpus touches.
std::set<int> coresOf(const Topology& t, const Ids& ids) {
    std::set<int> cores;
    for (const Cpu& cpu : t.cpus) {
        if (std::count(ids.begin(), ids.end(), cpu.id)) cores.insert(cpu.core);
    }
    return cores;
}

// The sockets a set of cpus touches.
std::set<int> socketsOf(const Topology& t, const Ids& ids) {
    std::set<int> sockets;
    for (const Cpu& cpu : t.cpus) {
        if (std::count(ids.begin(), ids.end(), cpu.id)) sockets.insert(cpu.socket);
    }
    return sockets;
}

// allocate() plus the checks every result must pass, including idempotence.
Grants checkedAllocate(const Topology& t, const std::vector<ProcessRequest>& r,
                       const Grants& current) {
    Grants grants = allocate(t, r, current);
    EXPECT_EQ(checkAllocation(t, r, grants), "") << describe(grants);
    EXPECT_EQ(checkStability(t, r, current, grants), "")
        << describe(current) << "-> " << describe(grants);
    EXPECT_EQ(allocate(t, r, grants), grants) << describe(grants);
    return grants;
}

TEST(Allocate, EmptyTopologyGrantsNothing) {
    Grants g = checkedAllocate(Topology{}, {request(1, {{0, 4}})}, {});
    EXPECT_EQ(g, Grants({{1, {}}}));
}

TEST(Allocate, EveryRequestAppearsEvenWithoutCpus) {
    Topology t = Topology::synthetic(1, 2, 1);
    Grants g = checkedAllocate(t, {request(1, {{0, 2}}), request(2, {{1, 2}}), request(3, {})}, {});
    EXPECT_EQ(g, Grants({{1, {0, 1}}, {2, {}}, {3, {}}}));
}

TEST(Allocate, SiblingsKeptTogether) {
    Topology t = Topology::synthetic(1, 4, 2);  // siblings: i and i+4
    Grants g =
        checkedAllocate(t, {request(1, {{0, 2}}), request(2, {{0, 2}}), request(3, {{0, 4}})}, {});
    EXPECT_EQ(coresOf(t, g[1]).size(), 1u);
    EXPECT_EQ(coresOf(t, g[2]).size(), 1u);
    EXPECT_EQ(coresOf(t, g[3]).size(), 2u);
}

TEST(Allocate, OddNeedUsesLeftoverHyperthread) {
    Topology t = Topology::synthetic(1, 4, 2);
    Grants g =
        checkedAllocate(t, {request(1, {{0, 3}}), request(2, {{0, 1}}), request(3, {{0, 2}})}, {});
    EXPECT_EQ(coresOf(t, g[1]).size(), 2u);
    EXPECT_EQ(coresOf(t, g[3]).size(), 1u);  // the even need still gets a whole core
    Ids all = g[1];
    all.insert(all.end(), g[2].begin(), g[2].end());
    EXPECT_EQ(coresOf(t, all).size(), 2u);  // the single cpu filled the half core 1 left
}

TEST(Allocate, GrowthTakesFreeSiblingFirst) {
    Topology t = Topology::synthetic(2, 4, 2);  // siblings: i and i+8
    Grants g = checkedAllocate(t, {request(1, {{0, 2}})}, {{1, {5}}});
    EXPECT_EQ(g[1], Ids({5, 13}));
}

TEST(Allocate, OneSocketPerProcess) {
    Topology t = Topology::synthetic(2, 4, 2);
    Grants g = checkedAllocate(t, {request(1, {{0, 8}}), request(2, {{0, 8}})}, {});
    EXPECT_EQ(socketsOf(t, g[1]).size(), 1u);
    EXPECT_EQ(socketsOf(t, g[2]).size(), 1u);
}

TEST(Allocate, SmallProcessesPackIntoTheFullerSocket) {
    // Process 1 already holds half of socket 0; the 8-cpu process needs socket 1 whole, so the
    // 4-cpu one must fit in the rest of socket 0 (best fit), whatever the order they arrive in.
    Topology t = Topology::synthetic(2, 4, 2);
    Grants current = {{1, {0, 1, 8, 9}}};
    Grants g = checkedAllocate(
        t, {request(1, {{0, 4}}), request(2, {{0, 4}}), request(3, {{0, 8}})}, current);
    EXPECT_EQ(g[1], Ids({0, 1, 8, 9}));
    EXPECT_EQ(socketsOf(t, g[2]), std::set<int>({0}));
    EXPECT_EQ(socketsOf(t, g[3]), std::set<int>({1}));
}

TEST(Allocate, GrowingProcessStaysOnItsSocket) {
    Topology t = Topology::synthetic(2, 4, 2);
    Grants g = checkedAllocate(t, {request(1, {{0, 6}})}, {{1, {6, 14}}});  // core 6 is on socket 1
    EXPECT_EQ(socketsOf(t, g[1]), std::set<int>({1}));
}

TEST(Allocate, KeepsOddLayoutWhenShareUnchanged) {
    Topology t = Topology::synthetic(2, 4, 2);
    Grants current = {{1, {1, 6, 11}}, {2, {0, 8}}};
    Grants g = checkedAllocate(
        t, {request(1, {{0, 3}}), request(2, {{0, 2}}), request(3, {{0, 4}})}, current);
    EXPECT_EQ(g[1], Ids({1, 6, 11}));
    EXPECT_EQ(g[2], Ids({0, 8}));
    EXPECT_EQ(g[3].size(), 4u);
}

TEST(Allocate, ShrinkKeepsWholeCoresInPlace) {
    Topology t = Topology::synthetic(2, 4, 2);  // socket 0: cpus 0-3 and 8-11
    Grants g = checkedAllocate(t, {request(1, {{0, 3}})}, {{1, {0, 1, 2, 3, 8, 9, 10, 11}}});
    EXPECT_EQ(g[1], Ids({0, 1, 8}));
}

TEST(Allocate, ShrinkGivesBackOtherSocketFirst) {
    Topology t = Topology::synthetic(2, 4, 2);
    Grants g = checkedAllocate(t, {request(1, {{0, 3}})}, {{1, {0, 8, 1, 4}}});  // 4 is on socket 1
    EXPECT_EQ(g[1], Ids({0, 1, 8}));
}

TEST(Allocate, LowerPriorityNewcomerMovesNothing) {
    Topology t = Topology::synthetic(1, 4, 2);
    Grants current = {{1, {0, 1, 4, 5}}, {2, {2, 3, 6, 7}}};
    Grants g = checkedAllocate(
        t, {request(1, {{0, 4}}), request(2, {{0, 4}}), request(3, {{1, 8}})}, current);
    EXPECT_EQ(g, Grants({{1, {0, 1, 4, 5}}, {2, {2, 3, 6, 7}}, {3, {}}}));
}

TEST(Allocate, SameLevelNewcomerTakesOnlyFromShrinkingProcesses) {
    Topology t = Topology::synthetic(1, 6, 2);
    Grants current = {{1, {0, 1, 2, 6, 7, 8}}, {2, {3, 4, 5, 9, 10, 11}}};
    std::vector<ProcessRequest> r = {request(1, {{0, 12}}), request(2, {{0, 12}}),
                                     request(3, {{0, 12}})};
    Grants g = checkedAllocate(t, r, current);
    EXPECT_EQ(g[1].size(), 4u);
    EXPECT_EQ(g[2].size(), 4u);
    EXPECT_EQ(g[3].size(), 4u);
    EXPECT_EQ(coresOf(t, g[3]).size(), 2u);  // the shrinking ones gave back whole cores
}

TEST(Allocate, HigherPriorityTakesCoresFromLowerPriority) {
    Topology t = Topology::synthetic(1, 2, 2);
    Grants g =
        checkedAllocate(t, {request(1, {{0, 2}}), request(2, {{5, 4}})}, {{2, {0, 1, 2, 3}}});
    EXPECT_EQ(g[1].size(), 2u);
    EXPECT_EQ(g[2].size(), 2u);
    EXPECT_EQ(coresOf(t, g[1]).size(), 1u);
}

TEST(Allocate, IgnoresInvalidCurrentEntries) {
    Topology t = Topology::synthetic(1, 2, 2);
    Grants current = {{1, {0, 99, -3}}, {2, {0, 1}}, {7, {2, 3}}};  // 7 is gone; 0 is claimed twice
    std::vector<ProcessRequest> r = {request(1, {{0, 2}}), request(2, {{0, 2}})};
    Grants g = checkedAllocate(t, r, current);
    EXPECT_EQ(g[1].size(), 2u);
    EXPECT_TRUE(std::count(g[1].begin(), g[1].end(), 0));  // the smaller key kept cpu 0
    EXPECT_TRUE(std::count(g[2].begin(), g[2].end(), 1));
}

TEST(Allocate, PartialManagedCoreCountsAsWholeCore) {
    // cpu 0 is not managed, so cpu 4 (its sibling) is a whole core as far as we can give.
    Topology full = Topology::synthetic(1, 4, 2);
    Topology t;
    for (const Cpu& cpu : full.cpus) {
        if (cpu.id != 0) t.cpus.push_back(cpu);
    }
    Grants g = checkedAllocate(t, {request(1, {{0, 1}}), request(2, {{0, 2}})}, {});
    EXPECT_EQ(g[1], Ids({4}));
    EXPECT_EQ(coresOf(t, g[2]).size(), 1u);
}

TEST(Allocate, DuplicateTopologyCpuCountsOnce) {
    Topology t = Topology::synthetic(1, 2, 1);
    t.cpus.push_back(t.cpus[0]);
    std::sort(t.cpus.begin(), t.cpus.end(), [](const Cpu& a, const Cpu& b) { return a.id < b.id; });
    Grants g = checkedAllocate(t, {request(1, {{0, 2}}), request(2, {{0, 2}})}, {});
    EXPECT_EQ(g, Grants({{1, {0}}, {2, {1}}}));
}

TEST(Allocate, PerSocketCoreIdsAreDistinctCores) {
    // Core id 0 on both sockets (as sysfs numbers them): they are two cores, not one.
    Topology t;
    t.cpus = {{0, 0, 0}, {1, 0, 1}, {2, 0, 0}, {3, 0, 1}};
    Grants g = checkedAllocate(t, {request(1, {{0, 2}}), request(2, {{0, 2}})}, {});
    EXPECT_EQ(g, Grants({{1, {0, 2}}, {2, {1, 3}}}));
}

TEST(Allocate, DetailedReportsShares) {
    Topology t = Topology::synthetic(1, 2, 2);
    Allocation a = allocateDetailed(t, {request(1, {{0, 1}, {2, 9}}), request(2, {{2, 9}})}, {});
    EXPECT_EQ(a.shares[1].perLevel[0], 1u);
    EXPECT_EQ(a.shares[1].total, a.grants[1].size());
    EXPECT_EQ(a.shares[2].total, a.grants[2].size());
}

// Enumerates every request combination of `processes` processes asking 0..maxAsk cores at levels 0
// and 1 (with a minimum and a cap on the first process), on one topology, each case starting from
// the previous case's result so that stability is exercised across changes too.
void enumerateSmallCases(const Topology& t, int processes, uint32_t maxAsk) {
    const int digits = processes * 2;
    int cases = 1;
    for (int i = 0; i < digits; ++i) cases *= static_cast<int>(maxAsk + 1);
    Grants previous;
    for (int variant = 0; variant < 4; ++variant) {
        for (int c = 0; c < cases; ++c) {
            std::vector<ProcessRequest> r;
            int rest = c;
            for (int p = 0; p < processes; ++p) {
                uint32_t high = rest % (maxAsk + 1);
                rest /= (maxAsk + 1);
                uint32_t low = rest % (maxAsk + 1);
                rest /= (maxAsk + 1);
                r.push_back(request(static_cast<ProcessKey>(p + 1), {{0, high}, {1, low}}));
            }
            r[0].minCores = (variant & 1) ? 2 : 0;
            r[0].maxCores = (variant & 2) ? 2 : UINT32_MAX;
            Grants g = allocate(t, r, previous);
            ASSERT_EQ(checkAllocation(t, r, g), "") << "case " << c << " variant " << variant;
            ASSERT_EQ(checkStability(t, r, previous, g), "") << "case " << c;
            ASSERT_EQ(allocate(t, r, g), g) << "case " << c << " variant " << variant;
            previous = g;
        }
    }
}

TEST(Allocate, ExhaustiveTwoProcessesOnFourCpus) {
    for (Topology t : {Topology::synthetic(1, 2, 2), Topology::synthetic(2, 1, 2),
                       Topology::synthetic(1, 4, 1), Topology::synthetic(2, 2, 1)}) {
        enumerateSmallCases(t, 2, 4);
    }
}

TEST(Allocate, ExhaustiveThreeProcessesOnSixCpus) {
    for (Topology t : {Topology::synthetic(1, 3, 2), Topology::synthetic(3, 1, 2),
                       Topology::synthetic(2, 3, 1)}) {
        enumerateSmallCases(t, 3, 2);
    }
}

// 256 cpus x 200 processes must take well under a millisecond in an optimised build; the bound here
// is a generous sanity check (minimum over several runs, so machine load cannot make it flake).
TEST(Allocate, LargeMachineIsFast) {
    Topology t = Topology::synthetic(2, 64, 2);
    std::mt19937 rng(7);
    std::vector<ProcessRequest> r;
    for (ProcessKey key = 1; key <= 200; ++key) {
        r.push_back(request(key, {{static_cast<int>(rng() % kPriorityLevels),
                                   static_cast<uint32_t>(1 + rng() % 4)}}));
    }
    Grants current = allocate(t, r, {});
    for (ProcessRequest& req : r) req.requested[rng() % kPriorityLevels] += rng() % 3;
    auto best = std::chrono::nanoseconds::max();
    for (int i = 0; i < 10; ++i) {
        auto start = std::chrono::steady_clock::now();
        Grants g = allocate(t, r, current);
        best = std::min(best, std::chrono::steady_clock::now() - start);
        ASSERT_EQ(g.size(), 200u);
    }
#if defined(ARBRUN_SANITIZE) || !defined(NDEBUG)
    const auto bound = std::chrono::milliseconds(500);
#else
    const auto bound = std::chrono::milliseconds(20);
#endif
    EXPECT_LT(best, bound) << std::chrono::duration_cast<std::chrono::microseconds>(best).count()
                           << " us";
    RecordProperty(
        "best_us",
        static_cast<int>(std::chrono::duration_cast<std::chrono::microseconds>(best).count()));
}

}  // namespace
}  // namespace arbpolicy
