// Barrier-aware release's pure decision (park_history.h): how a thread's park rhythm is learnt and
// when the release watcher waits for the runner's park instead of preempting it.
#include <gtest/gtest.h>

#include "sched/park_history.h"

namespace {

using arbrt::detail::ParkRhythm;
using arbrt::detail::recordPark;
using arbrt::detail::recordResume;
using arbrt::detail::shouldAwaitPark;

// A rhythm learnt from eight bursts of `burst` ticks, each followed by a wait of `wait` ticks, the
// last resume at `lastResume` (the thread is running its next burst from there).
ParkRhythm rhythmOf(uint64_t burst, uint64_t wait, uint64_t lastResume) {
    ParkRhythm r;
    uint64_t t = lastResume - 8 * (burst + wait);
    for (int i = 0; i < 8; ++i) {
        recordResume(&r, t);
        recordPark(&r, t + burst);
        t += burst + wait;
    }
    recordResume(&r, t);
    return r;
}

TEST(RecordPark, ParkWithoutAResumeMeasuresNothing) {
    ParkRhythm r;
    recordPark(&r, 1000);  // a thread's first park: it never resumed from one
    EXPECT_EQ(r.burstTicks, 0u);
    EXPECT_EQ(r.resumeTsc, 0u);
}

TEST(RecordPark, BurstIsFromTheResumeNotFromThePreviousPark) {
    ParkRhythm r;
    recordPark(&r, 1000);
    recordResume(&r, 9000);  // waited 8000 ticks at the barrier
    recordPark(&r, 13'000);
    EXPECT_EQ(r.burstTicks, 4000u);
    EXPECT_EQ(r.resumeTsc, 0u);
}

TEST(RecordPark, OneSlowPhaseMovesTheAverageByAQuarter) {
    ParkRhythm r = rhythmOf(4000, 1000, 100'000);
    ASSERT_EQ(r.burstTicks, 4000u);
    recordPark(&r, 100'000 + 8000);
    EXPECT_EQ(r.burstTicks, 5000u);
}

TEST(RecordPark, ClockGoingBackMeasuresNothing) {
    ParkRhythm r = rhythmOf(4000, 1000, 100'000);
    recordPark(&r, 90'000);
    EXPECT_EQ(r.burstTicks, 4000u);
}

TEST(ShouldAwaitPark, NeverParked_PreemptsAtOnce) {
    EXPECT_FALSE(shouldAwaitPark(ParkRhythm{}, 1'000'000, 0, 1'000'000));
    ParkRhythm once;
    recordPark(&once, 500);
    recordResume(&once, 600);
    EXPECT_FALSE(shouldAwaitPark(once, 1000, 0, 1'000'000));  // resumed, but no burst measured
}

TEST(ShouldAwaitPark, ZeroBudget_PreemptsAtOnce) {
    const ParkRhythm r = rhythmOf(1000, 100, 100'000);
    EXPECT_FALSE(shouldAwaitPark(r, 100'900, 0, 0));
}

TEST(ShouldAwaitPark, ParkDueWithinTheBudget_Waits) {
    const ParkRhythm r = rhythmOf(10'000, 3000, 100'000);
    // 9000 ticks into a 10000-tick burst: the park is 1000 ticks away, the budget 2000.
    EXPECT_TRUE(shouldAwaitPark(r, 109'000, 0, 2000));
    // Exactly at the end of the budget still waits.
    EXPECT_TRUE(shouldAwaitPark(r, 108'000, 0, 2000));
}

TEST(ShouldAwaitPark, ParkFartherThanTheBudget_Preempts) {
    const ParkRhythm r = rhythmOf(10'000, 3000, 100'000);
    // Early in the burst: the park is 9000 ticks away, the budget 2000.
    EXPECT_FALSE(shouldAwaitPark(r, 101'000, 0, 2000));
}

TEST(ShouldAwaitPark, BudgetAlreadySpent_Preempts) {
    const ParkRhythm r = rhythmOf(10'000, 3000, 100'000);
    EXPECT_TRUE(shouldAwaitPark(r, 109'500, 1000, 2000));   // 500 away, 1000 left
    EXPECT_FALSE(shouldAwaitPark(r, 109'500, 1600, 2000));  // 500 away, 400 left
    EXPECT_FALSE(shouldAwaitPark(r, 109'500, 2000, 2000));  // nothing left
}

TEST(ShouldAwaitPark, LateButWithinSlack_Waits) {
    const ParkRhythm r = rhythmOf(10'000, 3000, 100'000);
    // Past its usual park but within its usual burst again: a jittery phase, the park is due.
    EXPECT_TRUE(shouldAwaitPark(r, 119'000, 0, 2000));
}

TEST(ShouldAwaitPark, Overdue_Preempts) {
    const ParkRhythm r = rhythmOf(10'000, 3000, 100'000);
    // Twice its usual burst without a park: it is not behaving as it used to.
    EXPECT_FALSE(shouldAwaitPark(r, 120'000, 0, 2000));
    EXPECT_FALSE(shouldAwaitPark(r, 1'000'000, 0, 2000));
}

TEST(ShouldAwaitPark, ParkedNow_NothingToWaitFor) {
    ParkRhythm r = rhythmOf(10'000, 3000, 100'000);
    recordPark(&r, 110'000);  // parked: the dispatcher releases the core itself
    EXPECT_FALSE(shouldAwaitPark(r, 110'500, 0, 2000));
}

TEST(ShouldAwaitPark, ClockBeforeTheResume_Preempts) {
    const ParkRhythm r = rhythmOf(10'000, 3000, 100'000);
    EXPECT_FALSE(shouldAwaitPark(r, 99'000, 0, 2000));
}

}  // namespace
