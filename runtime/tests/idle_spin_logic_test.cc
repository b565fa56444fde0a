// IdleSpinLearner: the idle poll budget learnt from idle gaps (idle_spin.h).
#include "sched/idle_spin.h"

#include <gtest/gtest.h>

namespace arbrt::detail {
namespace {

constexpr uint64_t kBudget = 1600;

TEST(IdleSpinLearner, Budget_StartsWithAFullPoll) {
    IdleSpinLearner l;
    EXPECT_EQ(l.budget(kBudget), kBudget);
}

TEST(IdleSpinLearner, Record_GapsLongerThanTheBudgetShrinkThePollToAProbe) {
    IdleSpinLearner l;
    int periods = 0;
    while (l.budget(kBudget) == kBudget) {
        l.record(kBudget * 4, true, kBudget);
        ASSERT_LT(++periods, 20) << "never stopped polling";
    }
    EXPECT_EQ(l.budget(kBudget), kBudget / IdleSpinLearner::kProbeDivisor);
    EXPECT_GE(periods, 3) << "one long gap must not stop polling (a hand-off pattern survives it)";
}

TEST(IdleSpinLearner, Record_PeriodsWithoutWorkCountAsMisses) {
    IdleSpinLearner l;
    for (int i = 0; i < 40; ++i) l.record(1, false, kBudget);
    EXPECT_EQ(l.score(), 0u);
    EXPECT_EQ(l.probeScore(), 0u);
    EXPECT_EQ(l.budget(kBudget), 0u);
}

TEST(IdleSpinLearner, Record_ShortGapsAfterSleepsBringTheFullPollBack) {
    IdleSpinLearner l;
    for (int i = 0; i < 40; ++i) l.record(kBudget * 10, true, kBudget);
    ASSERT_EQ(l.score(), 0u);
    // Work now comes back within the budget, though the probe was too short to catch it (the
    // carrier slept): the gap alone says a full poll would have paid.
    int periods = 0;
    while (l.budget(kBudget) != kBudget) {
        l.record(kBudget / 2, true, kBudget);
        ASSERT_LT(++periods, 20) << "never polled again";
    }
    EXPECT_GE(periods, 3);
}

TEST(IdleSpinLearner, Record_GapEqualToTheBudgetIsCaught) {
    IdleSpinLearner l;
    for (int i = 0; i < 40; ++i) l.record(kBudget, true, kBudget);
    EXPECT_EQ(l.budget(kBudget), kBudget);
    EXPECT_GE(l.score(), IdleSpinLearner::kFull - (1u << IdleSpinLearner::kShift));
}

TEST(IdleSpinLearner, Record_MixedPatternPollsWhileMostGapsAreCaught) {
    // Three of four gaps caught: keep polling. One of four, and none short enough for the probe:
    // sleep at once. One of four within the probe: probe.
    IdleSpinLearner mostly, rarely, quickHandOffs;
    constexpr uint64_t kWithinProbe = kBudget / IdleSpinLearner::kProbeDivisor / 2;
    for (int i = 0; i < 200; ++i) {
        mostly.record(i % 4 == 0 ? kBudget * 8 : kBudget / 4, true, kBudget);
        rarely.record(i % 4 == 0 ? kBudget / 4 : kBudget * 8, true, kBudget);
        quickHandOffs.record(i % 4 == 0 ? kWithinProbe : kBudget * 8, true, kBudget);
    }
    EXPECT_EQ(mostly.budget(kBudget), kBudget);
    EXPECT_EQ(rarely.budget(kBudget), 0u);
    EXPECT_EQ(quickHandOffs.budget(kBudget), kBudget / IdleSpinLearner::kProbeDivisor);
}

// Woken by the network only (readiness is recorded as not caught): the probe goes too, but not
// after a few misses, and hand-offs within it bring it back.
TEST(IdleSpinLearner, Record_ProbeDroppedWhenItNeverCatchesAndBackWhenItWould) {
    IdleSpinLearner l;
    int periods = 0;
    while (l.budget(kBudget) != 0) {
        l.record(kBudget / 2, false, kBudget);
        ASSERT_LT(++periods, 40) << "never stopped probing";
    }
    EXPECT_GE(periods, 10) << "a few misses must not drop the probe";
    periods = 0;
    while (l.budget(kBudget) == 0) {
        l.record(kBudget / IdleSpinLearner::kProbeDivisor, true, kBudget);
        ASSERT_LT(++periods, 20) << "never probed again";
    }
    EXPECT_GE(l.budget(kBudget), kBudget / IdleSpinLearner::kProbeDivisor);
}

TEST(IdleSpinLearner, Budget_ZeroBudgetStaysZero) {
    IdleSpinLearner l;
    EXPECT_EQ(l.budget(0), 0u);
    l.record(5, true, 0);  // --idle-spin 0: every gap is a miss, and nothing polls anyway
    EXPECT_EQ(l.budget(0), 0u);
}

TEST(IdleSpinLearner, Resolve_ShortGapsEndedByReadiedThreadsStopThePoll) {
    IdleSpinLearner l;
    int periods = 0;
    // A server's idle periods: short, each ended by a thread the netpoll readied (stolen, or
    // queued here from elsewhere).
    while (l.budget(kBudget) != 0) {
        l.hold(kBudget / 100, kBudget);
        EXPECT_TRUE(l.holding());
        l.resolve(/*eventWake=*/true);
        EXPECT_FALSE(l.holding());
        ASSERT_LT(++periods, 60) << "readied threads kept the core polling";
    }
    EXPECT_LT(l.score(), IdleSpinLearner::kProbeThreshold);
}

TEST(IdleSpinLearner, Resolve_ShortGapsEndedByHandOffsKeepThePoll) {
    IdleSpinLearner l;
    for (int i = 0; i < 40; ++i) {
        l.hold(kBudget / 100, kBudget);
        l.resolve(/*eventWake=*/false);
    }
    EXPECT_EQ(l.score(), IdleSpinLearner::kFull);
    EXPECT_EQ(l.budget(kBudget), kBudget);
}

TEST(IdleSpinLearner, Hold_ASecondHoldResolvesTheFirstAsAHandOff) {
    IdleSpinLearner a, b;
    for (int i = 0; i < 40; ++i) a.record(kBudget * 10, true, kBudget);  // polling stopped
    for (int i = 0; i < 40; ++i) b.record(kBudget * 10, true, kBudget);
    // a: two short periods, the first never resolved by a run (its work went elsewhere); b: the
    // same periods recorded as hand-offs directly. Both learn the same.
    a.hold(1, kBudget);
    a.hold(1, kBudget);
    a.resolve(false);
    b.record(1, true, kBudget);
    b.record(1, true, kBudget);
    EXPECT_EQ(a.score(), b.score());
    EXPECT_EQ(a.probeScore(), b.probeScore());
    EXPECT_FALSE(a.holding());
}

TEST(IdleSpinLearner, Resolve_WithNothingHeldChangesNothing) {
    IdleSpinLearner l;
    l.resolve(true);
    l.resolve(false);
    EXPECT_EQ(l.score(), IdleSpinLearner::kFull);
    EXPECT_EQ(l.probeScore(), IdleSpinLearner::kFull);
}

}  // namespace
}  // namespace arbrt::detail
