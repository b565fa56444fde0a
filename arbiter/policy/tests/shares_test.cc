// computeShares: priority levels, water-filling, tie-breaks, max and min cores.
#include <gtest/gtest.h>

#include "arbpolicy/allocation.h"
#include "test_support.h"

namespace arbpolicy {
namespace {

using testing::request;

// Totals per key, for compact expectations.
std::map<ProcessKey, uint32_t> totals(const Shares& shares) {
    std::map<ProcessKey, uint32_t> out;
    for (const auto& [key, share] : shares) out[key] = share.total;
    return out;
}

using Totals = std::map<ProcessKey, uint32_t>;

TEST(ComputeShares, NoRequestsNoShares) {
    EXPECT_TRUE(computeShares(8, {}, {}).empty());
}

TEST(ComputeShares, ZeroCapacityGivesNothing) {
    EXPECT_EQ(totals(computeShares(0, {request(1, {{0, 3}})}, {})), Totals({{1, 0}}));
}

TEST(ComputeShares, ProcessAskingNothingGetsNothing) {
    EXPECT_EQ(totals(computeShares(4, {request(1, {})}, {})), Totals({{1, 0}}));
}

TEST(ComputeShares, HigherLevelServedFirst) {
    Shares s = computeShares(4, {request(1, {{1, 4}}), request(2, {{0, 3}})}, {});
    EXPECT_EQ(totals(s), Totals({{1, 1}, {2, 3}}));
    EXPECT_EQ(s[1].perLevel[1], 1u);
    EXPECT_EQ(s[2].perLevel[0], 3u);
}

TEST(ComputeShares, LowerLevelGetsNothingWhileHigherWants) {
    Shares s = computeShares(4, {request(1, {{0, 10}}), request(2, {{7, 1}})}, {});
    EXPECT_EQ(totals(s), Totals({{1, 4}, {2, 0}}));
}

TEST(ComputeShares, HolderAtLowerLevelStillLoses) {
    // Process 2 holds all four cpus, but process 1 asks at a higher level.
    Shares s = computeShares(4, {request(1, {{2, 4}}), request(2, {{5, 4}})}, {{2, 4}});
    EXPECT_EQ(totals(s), Totals({{1, 4}, {2, 0}}));
}

TEST(ComputeShares, EvenSplitWithinLevel) {
    Shares s =
        computeShares(7, {request(1, {{0, 9}}), request(2, {{0, 9}}), request(3, {{0, 9}})}, {});
    EXPECT_EQ(totals(s), Totals({{1, 3}, {2, 2}, {3, 2}}));
}

TEST(ComputeShares, WaterFillingSmallAskGetsWhatItAsks) {
    Shares s =
        computeShares(10, {request(1, {{0, 1}}), request(2, {{0, 9}}), request(3, {{0, 9}})}, {});
    EXPECT_EQ(totals(s), Totals({{1, 1}, {2, 5}, {3, 4}}));
}

TEST(ComputeShares, WaterFillingSeveralSmallAsks) {
    Shares s = computeShares(
        12,
        {request(1, {{0, 2}}), request(2, {{0, 3}}), request(3, {{0, 20}}), request(4, {{0, 20}})},
        {});
    EXPECT_EQ(totals(s), Totals({{1, 2}, {2, 3}, {3, 4}, {4, 3}}));
}

TEST(ComputeShares, LeftoverFlowsToNextLevel) {
    Shares s =
        computeShares(10, {request(1, {{0, 2}}), request(2, {{0, 3}}), request(3, {{3, 20}})}, {});
    EXPECT_EQ(totals(s), Totals({{1, 2}, {2, 3}, {3, 5}}));
}

TEST(ComputeShares, TieGoesToHolderThenSmallerKey) {
    std::vector<ProcessRequest> r = {request(1, {{0, 5}}), request(2, {{0, 5}})};
    EXPECT_EQ(totals(computeShares(3, r, {})), Totals({{1, 2}, {2, 1}}));
    EXPECT_EQ(totals(computeShares(3, r, {{2, 2}})), Totals({{1, 1}, {2, 2}}));
    EXPECT_EQ(totals(computeShares(3, r, {{1, 1}, {2, 2}})), Totals({{1, 1}, {2, 2}}));
}

TEST(ComputeShares, TieBreakCountsOnlyHoldingsBeyondHigherLevels) {
    // Process 1 gets 2 at level 0 for sure; at level 3 the odd core goes to whoever holds more
    // beyond its higher-level cores, so feeding either result back in gives the same split.
    std::vector<ProcessRequest> r = {request(1, {{0, 2}, {3, 5}}), request(2, {{3, 5}})};
    Shares first = computeShares(5, r, {});
    EXPECT_EQ(totals(first), Totals({{1, 3}, {2, 2}}));
    EXPECT_EQ(totals(computeShares(5, r, totals(first))), totals(first));
    Shares other = computeShares(5, r, {{1, 4}, {2, 1}});  // 1 holds 2 beyond level 0, 2 holds 1
    EXPECT_EQ(totals(other), Totals({{1, 4}, {2, 1}}));
    EXPECT_EQ(totals(computeShares(5, r, totals(other))), totals(other));
}

TEST(ComputeShares, MaxCoresCapsTotalAcrossLevels) {
    Shares s = computeShares(16, {request(1, {{0, 3}, {2, 5}}, 0, 4)}, {});
    EXPECT_EQ(s[1].total, 4u);
    EXPECT_EQ(s[1].perLevel[0], 3u);
    EXPECT_EQ(s[1].perLevel[2], 1u);
}

TEST(ComputeShares, MaxCoresLeavesCoresToOthers) {
    Shares s = computeShares(8, {request(1, {{0, 8}}, 0, 2), request(2, {{0, 8}})}, {});
    EXPECT_EQ(totals(s), Totals({{1, 2}, {2, 6}}));
}

TEST(ComputeShares, MaxCoresZeroGetsNothing) {
    EXPECT_EQ(totals(computeShares(8, {request(1, {{0, 8}}, 0, 0)}, {})), Totals({{1, 0}}));
}

TEST(ComputeShares, MinCoresUnreachableGetsNothingAndOthersGetTheCores) {
    Shares s =
        computeShares(6, {request(1, {{0, 4}}, 4), request(2, {{0, 4}}), request(3, {{1, 5}})}, {});
    EXPECT_EQ(totals(s), Totals({{1, 0}, {2, 4}, {3, 2}}));
    EXPECT_TRUE(s[1].belowMinimum);
    EXPECT_FALSE(s[2].belowMinimum);
}

TEST(ComputeShares, MinCoresReachableIsGranted) {
    Shares s = computeShares(8, {request(1, {{0, 4}}, 4), request(2, {{0, 4}})}, {});
    EXPECT_EQ(totals(s), Totals({{1, 4}, {2, 4}}));
}

TEST(ComputeShares, MinCoresDropsOneAtATime) {
    // Eight cpus, six processes that each need both of the two they ask for: four of them fit.
    std::vector<ProcessRequest> r;
    for (ProcessKey key = 1; key <= 6; ++key) r.push_back(request(key, {{0, 2}}, 2));
    Shares s = computeShares(8, r, {});
    EXPECT_EQ(totals(s), Totals({{1, 2}, {2, 2}, {3, 2}, {4, 2}, {5, 0}, {6, 0}}));
}

TEST(ComputeShares, MinCoresAdmissionIgnoresHoldings) {
    // Who gets its minimum depends on priority and key only (smaller key = earlier arrival when the
    // daemon numbers processes in order), so a re-run on the result decides the same way.
    std::vector<ProcessRequest> r;
    for (ProcessKey key = 1; key <= 6; ++key) r.push_back(request(key, {{0, 2}}, 2));
    Totals expected = {{1, 2}, {2, 2}, {3, 2}, {4, 2}, {5, 0}, {6, 0}};
    EXPECT_EQ(totals(computeShares(8, r, {{5, 2}, {6, 2}})), expected);
    EXPECT_EQ(totals(computeShares(8, r, expected)), expected);
}

TEST(ComputeShares, OddCoreGoesFirstToProcessThatNeedsItForItsMinimum) {
    // Five cores, two processes wanting three: the odd core lets process 2 reach its minimum, so it
    // goes there rather than to the smaller key or the holder.
    std::vector<ProcessRequest> r = {request(1, {{0, 3}}), request(2, {{0, 3}}, 3)};
    EXPECT_EQ(totals(computeShares(5, r, {})), Totals({{1, 2}, {2, 3}}));
    EXPECT_EQ(totals(computeShares(5, r, {{1, 3}, {2, 2}})), Totals({{1, 2}, {2, 3}}));
}

TEST(ComputeShares, OddCoreGoesLastToProcessShortAnyway) {
    // Process 1 cannot reach 3 here even with the odd core; process 2 gets it, and then 1 is
    // dropped and 2 gets 1's cores too.
    std::vector<ProcessRequest> r = {request(1, {{0, 4}}, 4), request(2, {{0, 4}})};
    Shares s = computeShares(5, r, {{1, 3}});
    EXPECT_EQ(totals(s), Totals({{1, 0}, {2, 4}}));
}

TEST(ComputeShares, MinCoresDropsLowerPriorityFirst) {
    // Both fall short at first (1 gets 2+1, 2 gets 2); dropping the lower-priority one lets 1
    // reach 4.
    Shares s = computeShares(5, {request(1, {{0, 2}, {3, 2}}, 4), request(2, {{3, 4}}, 3)}, {});
    EXPECT_EQ(totals(s), Totals({{1, 4}, {2, 0}}));
    EXPECT_TRUE(s[2].belowMinimum);
}

TEST(ComputeShares, MinAboveWhatItCanUseMeansAllOfIt) {
    EXPECT_EQ(totals(computeShares(8, {request(1, {{0, 2}}, 5)}, {})), Totals({{1, 2}}));
    EXPECT_EQ(totals(computeShares(8, {request(1, {{0, 6}}, 5, 3)}, {})), Totals({{1, 3}}));
    EXPECT_EQ(totals(computeShares(2, {request(1, {{0, 6}}, 5, 3)}, {})), Totals({{1, 0}}));
}

TEST(ComputeShares, DuplicateKeyCountsOnce) {
    Shares s = computeShares(8, {request(1, {{0, 2}}), request(1, {{0, 8}})}, {});
    EXPECT_EQ(totals(s), Totals({{1, 2}}));
}

TEST(ComputeShares, HugeRequestsDoNotOverflow) {
    ProcessRequest greedy = request(1, {});
    greedy.requested.fill(UINT32_MAX);
    Shares s = computeShares(10, {greedy, request(2, {{0, UINT32_MAX}}, UINT32_MAX)}, {});
    EXPECT_EQ(totals(s), Totals({{1, 10}, {2, 0}}));  // 2's minimum (all it can use) cannot be met
    s = computeShares(10, {greedy, request(2, {{0, UINT32_MAX}})}, {});
    EXPECT_EQ(totals(s), Totals({{1, 5}, {2, 5}}));
}

TEST(ComputeShares, PerLevelSumsToTotal) {
    Shares s =
        computeShares(9, {request(1, {{0, 1}, {1, 2}, {7, 9}}), request(2, {{1, 1}, {7, 9}})}, {});
    for (const auto& [key, share] : s) {
        uint32_t sum = 0;
        for (uint32_t n : share.perLevel) sum += n;
        EXPECT_EQ(sum, share.total) << key;
    }
    EXPECT_EQ(totals(s), Totals({{1, 5}, {2, 4}}));
}

}  // namespace
}  // namespace arbpolicy
