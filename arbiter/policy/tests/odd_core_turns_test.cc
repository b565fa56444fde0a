// Odd-core turns (OddCoreTurns): equal claimants of a level take the cores that do not divide
// evenly in turn; nothing else changes. A small driver plays the daemon: one rotating count per
// share period, fed its own previous result.
#include <gtest/gtest.h>

#include <random>

#include "arbpolicy/allocation.h"
#include "test_support.h"

namespace arbpolicy {
namespace {

using testing::request;
using Totals = std::map<ProcessKey, uint32_t>;

// Totals per key, for compact expectations.
Totals totals(const Shares& shares) {
    Totals out;
    for (const auto& [key, share] : shares) out[key] = share.total;
    return out;
}

// The daemon's loop over counts only: what a call returned (totals as holdings, stamps) is the next
// call's input, as if every release completed within the period.
class TurnDriver {
  public:
    TurnDriver(uint32_t capacity, std::vector<ProcessRequest> requests)
        : capacity_(capacity), requests_(std::move(requests)) {
        run(false);
    }
    // One share period ending: a rotating count. Returns the shares.
    const Shares& rotate() { return run(true); }
    // An ordinary re-allocation (a request changed, a release completed, ...).
    const Shares& keep() { return run(false); }
    const Shares& shares() const { return shares_; }
    // Keys holding a shared odd core now.
    std::vector<ProcessKey> holders() const {
        std::vector<ProcessKey> out;
        for (const auto& [key, share] : shares_)
            if (share.holdsSharedOddCore) out.push_back(key);
        return out;
    }

  private:
    const Shares& run(bool rotate) {
        OddCoreTurns turns;
        turns.rotate = rotate;
        for (const auto& [key, share] : shares_) turns.stamps[key] = share.oddCoreTurns;
        shares_ = computeShares(capacity_, requests_, totals(shares_), turns);
        return shares_;
    }

    uint32_t capacity_;
    std::vector<ProcessRequest> requests_;
    Shares shares_;
};

TEST(OddCoreTurns, WithoutTurnsTheOldStableRuleHolds) {
    std::vector<ProcessRequest> r = {request(1, {{7, 3}}), request(2, {{7, 3}})};
    Shares s = computeShares(3, r, {});
    EXPECT_EQ(totals(s), Totals({{1, 2}, {2, 1}}));
    EXPECT_TRUE(s[1].holdsSharedOddCore);
    EXPECT_FALSE(s[1].waitsForOddCore);
    EXPECT_TRUE(s[2].waitsForOddCore);
    EXPECT_FALSE(s[2].holdsSharedOddCore);
    EXPECT_EQ(s[1].oddCoreTurns[7], 1u);  // its first turn
    EXPECT_EQ(s[2].oddCoreTurns, TurnStamps{});
    EXPECT_EQ(totals(computeShares(3, r, {{2, 2}, {1, 1}})), Totals({{1, 1}, {2, 2}}));
}

TEST(OddCoreTurns, Rotate_TwoEqualClaimantsAlternate) {
    // The brief's case: three cores, two batch tenants at priority 7 asking for three each.
    TurnDriver d(3, {request(1, {{7, 3}}), request(2, {{7, 3}})});
    EXPECT_EQ(d.holders(), std::vector<ProcessKey>{1});
    std::map<ProcessKey, int> periods;
    for (int period = 0; period < 20; ++period) {
        d.rotate();
        ASSERT_EQ(d.holders().size(), 1u);
        ProcessKey expected = period % 2 == 0 ? 2 : 1;
        EXPECT_EQ(d.holders()[0], expected) << "period " << period;
        EXPECT_EQ(totals(d.shares())[expected], 2u);
        EXPECT_EQ(totals(d.shares())[3 - expected], 1u);
        periods[d.holders()[0]]++;
    }
    EXPECT_EQ(periods, (std::map<ProcessKey, int>{{1, 10}, {2, 10}}));
}

TEST(OddCoreTurns, Rotate_ThreeEqualClaimantsTakeTurnsInOrder) {
    TurnDriver d(4, {request(1, {{5, 9}}), request(2, {{5, 9}}), request(3, {{5, 9}})});
    std::vector<ProcessKey> order = d.holders();
    for (int period = 0; period < 9; ++period) {
        d.rotate();
        ASSERT_EQ(d.holders().size(), 1u);
        order.push_back(d.holders()[0]);
    }
    EXPECT_EQ(order, (std::vector<ProcessKey>{1, 2, 3, 1, 2, 3, 1, 2, 3, 1}));
}

TEST(OddCoreTurns, Rotate_TwoOddCoresAmongThreeAreSharedEvenly) {
    // Five cores, three claimants: two odd cores, each process holds one two periods in three.
    TurnDriver d(5, {request(1, {{7, 9}}), request(2, {{7, 9}}), request(3, {{7, 9}})});
    std::map<ProcessKey, int> periods;
    for (int period = 0; period < 30; ++period) {
        d.rotate();
        ASSERT_EQ(d.holders().size(), 2u);
        for (ProcessKey key : d.holders()) periods[key]++;
        uint32_t sum = 0;
        for (const auto& [key, n] : totals(d.shares())) sum += n;
        EXPECT_EQ(sum, 5u);
    }
    EXPECT_EQ(periods, (std::map<ProcessKey, int>{{1, 20}, {2, 20}, {3, 20}}));
}

TEST(OddCoreTurns, Keep_TurnHolderKeepsItWhilePredecessorReleases) {
    // After a rotation gave the odd core to 2, an ordinary count that runs before 1 gave its core
    // back (1 and 2 both hold one) must not hand it back to 1.
    std::vector<ProcessRequest> r = {request(1, {{7, 3}}), request(2, {{7, 3}})};
    Shares first = computeShares(3, r, {});
    OddCoreTurns turns;
    turns.rotate = true;
    for (const auto& [key, share] : first) turns.stamps[key] = share.oddCoreTurns;
    Shares rotated = computeShares(3, r, totals(first), turns);
    ASSERT_EQ(totals(rotated), Totals({{1, 1}, {2, 2}}));
    EXPECT_GT(rotated[2].oddCoreTurns[7], 0u);
    turns.rotate = false;
    for (const auto& [key, share] : rotated) turns.stamps[key] = share.oddCoreTurns;
    Shares during = computeShares(3, r, {{1, 1}, {2, 1}}, turns);
    EXPECT_EQ(totals(during), Totals({{1, 1}, {2, 2}}));
    EXPECT_EQ(during[1].oddCoreTurns, rotated[1].oddCoreTurns);
    // And once the move is done it stays put, and so do the stamps.
    for (const auto& [key, share] : during) turns.stamps[key] = share.oddCoreTurns;
    Shares after = computeShares(3, r, totals(during), turns);
    EXPECT_EQ(totals(after), totals(during));
    EXPECT_EQ(after[2].oddCoreTurns, during[2].oddCoreTurns);
}

TEST(OddCoreTurns, Keep_HoldingsStillWinOverTurns) {
    // Between periods a process that holds the odd core keeps it even when its turn is older.
    std::vector<ProcessRequest> r = {request(1, {{7, 3}}), request(2, {{7, 3}})};
    OddCoreTurns turns;
    turns.stamps[1][7] = 1;
    turns.stamps[2][7] = 9;
    EXPECT_EQ(totals(computeShares(3, r, {{1, 2}, {2, 1}}, turns)), Totals({{1, 2}, {2, 1}}));
    // With equal holdings the more recent turn keeps it.
    EXPECT_EQ(totals(computeShares(3, r, {{1, 1}, {2, 1}}, turns)), Totals({{1, 1}, {2, 2}}));
}

TEST(OddCoreTurns, Rotate_FreshStampsExceedEveryStampGiven) {
    std::vector<ProcessRequest> r = {request(1, {{7, 3}}), request(2, {{7, 3}})};
    OddCoreTurns turns;
    turns.rotate = true;
    turns.stamps[1][7] = 4;
    turns.stamps[99][3] = 40;  // a process that left: its stamp still bounds the fresh ones
    Shares s = computeShares(3, r, {{1, 2}, {2, 1}}, turns);
    EXPECT_EQ(totals(s), Totals({{1, 1}, {2, 2}}));
    EXPECT_EQ(s[2].oddCoreTurns[7], 41u);
    EXPECT_EQ(s[1].oddCoreTurns[7], 4u);  // losers keep their stamp
}

TEST(OddCoreTurns, Rotate_NoOddCoreNoTurns) {
    TurnDriver d(4, {request(1, {{7, 3}}), request(2, {{7, 3}})});
    for (int period = 0; period < 3; ++period) {
        const Shares& s = d.rotate();
        EXPECT_EQ(totals(s), Totals({{1, 2}, {2, 2}}));
        for (const auto& [key, share] : s) {
            EXPECT_FALSE(share.holdsSharedOddCore || share.waitsForOddCore) << key;
            EXPECT_EQ(share.oddCoreTurns, TurnStamps{}) << key;
        }
    }
}

TEST(OddCoreTurns, Rotate_UnequalPrioritiesNeverRotateAcrossLevels) {
    // Level 0 takes all it asks (2); level 7's two claimants share the odd one of the three left.
    TurnDriver d(5, {request(1, {{0, 2}}), request(2, {{7, 9}}), request(3, {{7, 9}})});
    for (int period = 0; period < 6; ++period) {
        const Shares& s = d.rotate();
        EXPECT_EQ(s.at(1).perLevel[0], 2u);
        EXPECT_EQ(s.at(1).total, 2u);
        EXPECT_FALSE(s.at(1).holdsSharedOddCore || s.at(1).waitsForOddCore);
        EXPECT_EQ(s.at(2).total + s.at(3).total, 3u);
        EXPECT_EQ(d.holders().size(), 1u);
    }
    // A single process per level: the odd cores of an uneven machine are nobody's to share.
    TurnDriver single(3, {request(1, {{2, 9}}), request(2, {{7, 9}})});
    for (int period = 0; period < 3; ++period) {
        EXPECT_EQ(totals(single.rotate()), Totals({{1, 3}, {2, 0}}));
        EXPECT_TRUE(single.holders().empty());
    }
}

TEST(OddCoreTurns, Rotate_HigherLevelOddCoreIsSharedThereOnly) {
    // Two level-3 processes split five cores (the odd one rotates between them); the level-7
    // process gets nothing either way.
    TurnDriver d(5, {request(1, {{3, 9}}), request(2, {{3, 9}}), request(3, {{7, 9}})});
    std::map<ProcessKey, int> periods;
    for (int period = 0; period < 10; ++period) {
        const Shares& s = d.rotate();
        EXPECT_EQ(s.at(3).total, 0u);
        EXPECT_FALSE(s.at(3).waitsForOddCore);
        for (ProcessKey key : d.holders()) periods[key]++;
    }
    EXPECT_EQ(periods, (std::map<ProcessKey, int>{{1, 5}, {2, 5}}));
}

TEST(OddCoreTurns, Rotate_ProcessAskingLessThanItsShareIsUnaffected) {
    TurnDriver d(6, {request(1, {{7, 1}}), request(2, {{7, 9}}), request(3, {{7, 9}})});
    for (int period = 0; period < 6; ++period) {
        const Shares& s = d.rotate();
        EXPECT_EQ(s.at(1).total, 1u);
        EXPECT_FALSE(s.at(1).holdsSharedOddCore || s.at(1).waitsForOddCore);
        EXPECT_EQ(s.at(2).total + s.at(3).total, 5u);
        EXPECT_EQ(d.holders(), std::vector<ProcessKey>{period % 2 == 0 ? 3u : 2u});
    }
}

TEST(OddCoreTurns, Rotate_MinimumThatNeedsTheOddCoreKeepsIt) {
    // Eight cores, three claimants (base 2, two odd): process 1 reaches its minimum of 3 only with
    // an odd core, so it always has one; 2 and 3 take turns with the other.
    TurnDriver d(8, {request(1, {{7, 9}}, 3), request(2, {{7, 9}}), request(3, {{7, 9}})});
    std::map<ProcessKey, int> periods;
    for (int period = 0; period < 10; ++period) {
        const Shares& s = d.rotate();
        EXPECT_EQ(s.at(1).total, 3u);
        EXPECT_FALSE(s.at(1).holdsSharedOddCore || s.at(1).waitsForOddCore);
        ASSERT_EQ(d.holders().size(), 1u);
        periods[d.holders()[0]]++;
    }
    EXPECT_EQ(periods, (std::map<ProcessKey, int>{{2, 5}, {3, 5}}));
    // Five cores: the only odd core lifts 1 to its minimum, so there is nothing to share.
    TurnDriver tight(5, {request(1, {{7, 3}}, 3), request(2, {{7, 3}})});
    EXPECT_EQ(totals(tight.rotate()), Totals({{1, 3}, {2, 2}}));
    EXPECT_TRUE(tight.holders().empty());
    EXPECT_FALSE(tight.shares().at(2).waitsForOddCore);
}

TEST(OddCoreTurns, Rotate_NewcomerGetsTheNextTurn) {
    // A process that never had a turn (stamp 0) goes before those that had one.
    std::vector<ProcessRequest> r = {request(1, {{7, 9}}), request(2, {{7, 9}}),
                                     request(3, {{7, 9}})};
    OddCoreTurns turns;
    turns.rotate = true;
    turns.stamps[1][7] = 5;
    turns.stamps[2][7] = 3;
    Shares s = computeShares(4, r, {{1, 2}, {2, 1}}, turns);
    EXPECT_EQ(totals(s), Totals({{1, 1}, {2, 1}, {3, 2}}));
}

TEST(OddCoreTurns, AllocateDetailed_RotationMovesOneCpu) {
    Topology t = Topology::synthetic(1, 3, 1);
    std::vector<ProcessRequest> r = {request(1, {{7, 3}}), request(2, {{7, 3}})};
    const int a = t.cpus[0].id, b = t.cpus[1].id, c = t.cpus[2].id;
    Grants current = {{1, {a, b}}, {2, {c}}};
    OddCoreTurns turns;
    turns.rotate = true;
    Allocation rotated = allocateDetailed(t, r, current, turns);
    ASSERT_EQ(rotated.grants[1].size(), 1u);
    ASSERT_EQ(rotated.grants[2].size(), 2u);
    EXPECT_TRUE(rotated.grants[1][0] == a || rotated.grants[1][0] == b);
    EXPECT_TRUE(std::count(rotated.grants[2].begin(), rotated.grants[2].end(), c));
    EXPECT_TRUE(rotated.shares[2].holdsSharedOddCore);
    EXPECT_TRUE(rotated.shares[1].waitsForOddCore);
}

TEST(OddCoreTurns, Property_RotationChangesOnlyWhoGetsTheOddCores) {
    // Random requests (1-6 processes, 1-3 levels, some minimums and caps), random stamps: a
    // rotating count gives every level the same cores as a keeping one, gives every process that is
    // not an equal claimant the same cores, and moves each claimant by at most one.
    std::mt19937_64 rng(20240611);
    auto uniform = [&](uint64_t lo, uint64_t hi) {
        return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
    };
    for (int iteration = 0; iteration < 3000; ++iteration) {
        const uint32_t capacity = static_cast<uint32_t>(uniform(0, 16));
        std::vector<ProcessRequest> r;
        OddCoreTurns turns;
        std::map<ProcessKey, uint32_t> held;
        const int processes = static_cast<int>(uniform(1, 6));
        for (int i = 0; i < processes; ++i) {
            ProcessKey key = uniform(1, 8);
            std::vector<std::pair<int, uint32_t>> asks;
            for (int n = static_cast<int>(uniform(1, 3)); n > 0; --n)
                asks.push_back({static_cast<int>(uniform(0, 7)), uint32_t(uniform(0, 9))});
            r.push_back(request(key, asks, uniform(0, 3) == 0 ? uint32_t(uniform(1, 4)) : 0,
                                uniform(0, 3) == 0 ? uint32_t(uniform(0, 6)) : UINT32_MAX));
            for (uint64_t& stamp : turns.stamps[key]) stamp = uniform(0, 5);
            held[key] = static_cast<uint32_t>(uniform(0, 4));
        }
        Shares kept = computeShares(capacity, r, held, turns);
        turns.rotate = true;
        Shares rotated = computeShares(capacity, r, held, turns);
        ASSERT_EQ(kept.size(), rotated.size());
        std::array<uint32_t, kPriorityLevels> keptLevels{}, rotatedLevels{};
        for (const auto& [key, k] : kept) {
            const ProcessShare& x = rotated.at(key);
            for (int l = 0; l < kPriorityLevels; ++l) {
                keptLevels[l] += k.perLevel[l];
                rotatedLevels[l] += x.perLevel[l];
            }
            EXPECT_EQ(k.belowMinimum, x.belowMinimum) << key;
            bool claimant = k.holdsSharedOddCore || k.waitsForOddCore;
            EXPECT_EQ(claimant, x.holdsSharedOddCore || x.waitsForOddCore) << key;
            if (!claimant) {
                EXPECT_EQ(k.perLevel, x.perLevel) << key;
                EXPECT_EQ(k.oddCoreTurns, x.oddCoreTurns) << key;
            } else {
                EXPECT_LE(std::max(k.total, x.total) - std::min(k.total, x.total), 1u) << key;
            }
            if (!k.holdsSharedOddCore) {
                EXPECT_EQ(k.oddCoreTurns, turns.stamps.at(key)) << key;
            }
            if (!x.holdsSharedOddCore) {
                EXPECT_EQ(x.oddCoreTurns, turns.stamps.at(key)) << key;
            }
        }
        EXPECT_EQ(keptLevels, rotatedLevels) << "iteration " << iteration;
        if (::testing::Test::HasFailure()) break;
    }
}

}  // namespace
}  // namespace arbpolicy
