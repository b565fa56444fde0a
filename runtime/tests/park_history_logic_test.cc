// Barrier-aware release's pure decision (park_history.h): how a thread's park rhythm is learnt and
// when the release watcher waits for the runner's park instead of preempting it.
#include <gtest/gtest.h>

#include "park_history.h"

namespace {

using arbrt::detail::ParkRhythm;
using arbrt::detail::recordPark;
using arbrt::detail::shouldAwaitPark;

// A rhythm learnt from parks every `period` ticks, the last at `last`.
ParkRhythm rhythmOf(uint64_t period, uint64_t last) {
    ParkRhythm r;
    for (uint64_t t = last - 8 * period; t <= last; t += period) recordPark(&r, t);
    return r;
}

TEST(RecordPark, FirstParkHasNoPeriod) {
    ParkRhythm r;
    recordPark(&r, 1000);
    EXPECT_EQ(r.lastParkTsc, 1000u);
    EXPECT_EQ(r.periodTicks, 0u);
}

TEST(RecordPark, SecondParkSetsThePeriod) {
    ParkRhythm r;
    recordPark(&r, 1000);
    recordPark(&r, 5000);
    EXPECT_EQ(r.periodTicks, 4000u);
    EXPECT_EQ(r.lastParkTsc, 5000u);
}

TEST(RecordPark, OneSlowPhaseMovesTheAverageByAQuarter) {
    ParkRhythm r = rhythmOf(4000, 100'000);
    ASSERT_EQ(r.periodTicks, 4000u);
    recordPark(&r, 100'000 + 8000);
    EXPECT_EQ(r.periodTicks, 5000u);
}

TEST(RecordPark, ClockGoingBackOnlyMovesTheLastPark) {
    ParkRhythm r = rhythmOf(4000, 100'000);
    recordPark(&r, 90'000);
    EXPECT_EQ(r.periodTicks, 4000u);
    EXPECT_EQ(r.lastParkTsc, 90'000u);
}

TEST(ShouldAwaitPark, NeverParked_PreemptsAtOnce) {
    EXPECT_FALSE(shouldAwaitPark(ParkRhythm{}, 1'000'000, 0, 1'000'000));
    ParkRhythm once;
    recordPark(&once, 500);
    EXPECT_FALSE(shouldAwaitPark(once, 1000, 0, 1'000'000));
}

TEST(ShouldAwaitPark, ZeroBudget_PreemptsAtOnce) {
    const ParkRhythm r = rhythmOf(1000, 100'000);
    EXPECT_FALSE(shouldAwaitPark(r, 100'900, 0, 0));
}

TEST(ShouldAwaitPark, ParkDueWithinTheBudget_Waits) {
    const ParkRhythm r = rhythmOf(10'000, 100'000);
    // 9000 ticks into a 10000-tick phase: the park is 1000 ticks away, the budget 2000.
    EXPECT_TRUE(shouldAwaitPark(r, 109'000, 0, 2000));
    // Exactly at the end of the budget still waits.
    EXPECT_TRUE(shouldAwaitPark(r, 108'000, 0, 2000));
}

TEST(ShouldAwaitPark, ParkFartherThanTheBudget_Preempts) {
    const ParkRhythm r = rhythmOf(10'000, 100'000);
    // Early in the phase: the park is 9000 ticks away, the budget 2000.
    EXPECT_FALSE(shouldAwaitPark(r, 101'000, 0, 2000));
}

TEST(ShouldAwaitPark, BudgetAlreadySpent_Preempts) {
    const ParkRhythm r = rhythmOf(10'000, 100'000);
    EXPECT_TRUE(shouldAwaitPark(r, 109'500, 1000, 2000));   // 500 away, 1000 left
    EXPECT_FALSE(shouldAwaitPark(r, 109'500, 1600, 2000));  // 500 away, 400 left
    EXPECT_FALSE(shouldAwaitPark(r, 109'500, 2000, 2000));  // nothing left
}

TEST(ShouldAwaitPark, LateButWithinSlack_Waits) {
    const ParkRhythm r = rhythmOf(10'000, 100'000);
    // Past its usual park but within half a period: a jittery phase, the park is imminent.
    EXPECT_TRUE(shouldAwaitPark(r, 114'000, 0, 2000));
}

TEST(ShouldAwaitPark, Overdue_Preempts) {
    const ParkRhythm r = rhythmOf(10'000, 100'000);
    // One and a half periods without a park: it is not behaving as it used to.
    EXPECT_FALSE(shouldAwaitPark(r, 115'000, 0, 2000));
    EXPECT_FALSE(shouldAwaitPark(r, 1'000'000, 0, 2000));
}

TEST(ShouldAwaitPark, ClockBeforeTheLastPark_Preempts) {
    const ParkRhythm r = rhythmOf(10'000, 100'000);
    EXPECT_FALSE(shouldAwaitPark(r, 99'000, 0, 2000));
}

}  // namespace
