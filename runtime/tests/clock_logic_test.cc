// The runtime's TSC clock (clock.cc): deadlines become TSC readings relative to the present, so a
// rate error costs its share of the time left to a deadline, never of the process's age (a
// process that had run for a minute used to wake its sleepers tens of milliseconds late).
#include <gtest/gtest.h>

#include <ctime>

#include "arbrt/time.h"
#include "platform/arch.h"
#include "sched/runtime_state.h"

namespace {

using namespace arbrt::detail;

class Clock : public ::testing::Test {
  protected:
    void SetUp() override { calibrateClock(); }
};

TEST_F(Clock, NsToTsc_FutureDeadlineIsThatFarAhead) {
    const uint64_t now = arbrt::nowNs();
    const uint64_t deadlineTsc = nsToTsc(now + 10'000'000);
    const uint64_t tsc = rdtsc();
    ASSERT_GT(deadlineTsc, tsc);
    // 10 ms ahead, less the time since `now` was read; generous bounds (a descheduled test).
    EXPECT_GT(deadlineTsc - tsc, ticksForNs(5'000'000));
    EXPECT_LE(deadlineTsc - tsc, ticksForNs(10'000'000) + ticksForNs(10'000));
}

TEST_F(Clock, NsToTsc_PastDeadlineIsDue) {
    const uint64_t now = arbrt::nowNs();
    const uint64_t past = nsToTsc(now - 1'000'000);
    const uint64_t present = nsToTsc(now);
    const uint64_t tsc = rdtsc();  // read after both (argument order is unspecified)
    EXPECT_LE(past, tsc);
    EXPECT_LE(present, tsc);
}

TEST_F(Clock, NsToTsc_NeverAndFarDeadlines) {
    EXPECT_EQ(nsToTsc(~uint64_t{0}), ~uint64_t{0});          // no timer
    EXPECT_EQ(nsToTsc(~uint64_t{0} - 1), ~uint64_t{0} - 1);  // saturated, not wrapped
}

TEST_F(Clock, Rate_MatchesMonotonicAfterRefinement) {
    // A refinement over 110 ms of baseline, then a 20 ms span compared.
    const uint64_t until = arbrt::nowNs() + 110'000'000;
    while (arbrt::nowNs() < until) cpuRelax();
    refineClockRate();
    const uint64_t n0 = arbrt::nowNs(), t0 = rdtsc();
    const uint64_t end = n0 + 20'000'000;
    while (arbrt::nowNs() < end) cpuRelax();
    const uint64_t t1 = rdtsc(), n1 = arbrt::nowNs();
    const double measured = double(ticksToNs(t1 - t0));
    EXPECT_NEAR(measured / double(n1 - n0), 1.0, 0.01);
}

TEST_F(Clock, Calibration_ShortSpanMatchesMonotonic) {
    // The start-up calibration alone (100 us, bracketed), no refinement: a 20 ms span in TSC
    // ticks converts to within 0.2% of CLOCK_MONOTONIC (measured: 43 ppm at worst on a loaded VM).
    const uint64_t n0 = arbrt::nowNs(), t0 = rdtsc();
    const uint64_t end = n0 + 20'000'000;
    while (arbrt::nowNs() < end) cpuRelax();
    const uint64_t t1 = rdtsc(), n1 = arbrt::nowNs();
    EXPECT_NEAR(double(ticksToNs(t1 - t0)) / double(n1 - n0), 1.0, 0.002);
}

TEST_F(Clock, Calibration_OverlapsTheWorkBetweenItsSamples) {
    // Work between begin and finish that outlasts the span leaves nothing to wait for.
    const ClockCalibration begun = beginClockCalibration();
    const uint64_t until = arbrt::nowNs() + 1'000'000;
    while (arbrt::nowNs() < until) cpuRelax();
    const uint64_t before = arbrt::nowNs();
    finishClockCalibration(begun);
    // No 100 us sleep: generous bound for a descheduled test, well under the span + a sleep.
    EXPECT_LT(arbrt::nowNs() - before, 200'000u);
    EXPECT_NEAR(double(ticksToNs(ticksForNs(1'000'000))), 1e6, 1e3);
}

TEST_F(Clock, RefineClockRate_SoonAfterStartThenEverySecond) {
    // Right after a 100 us calibration the next refinement is due within 7 spans (the span
    // grows 8-fold), never more than a second later.
    const uint64_t before = arbrt::nowNs();
    const uint64_t next = refineClockRate();
    const uint64_t after = arbrt::nowNs();
    EXPECT_GE(next, before + 7 * 100'000);
    EXPECT_LE(next, after + 1'000'000'000);
}

TEST_F(Clock, TicksForNs_RoundTrips) {
    EXPECT_NEAR(double(ticksToNs(ticksForNs(1'000'000))), 1e6, 1e3);
}

}  // namespace
