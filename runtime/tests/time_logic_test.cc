// Pure logic of the runtime's clock API that needs no running runtime (and so can run under
// ASan/UBSan): deadline conversion and nowNs() before start().
#include <arbrt/time.h>
#include <gtest/gtest.h>

#include <ctime>

namespace {

constexpr uint64_t kSecond = 1'000'000'000;

TEST(DeadlineToNs, Monotonic_PassesThrough) {
    uint64_t out = 0;
    ASSERT_TRUE(arbrt::deadlineToNs(CLOCK_MONOTONIC, timespec{12, 345}, &out));
    EXPECT_EQ(out, 12 * kSecond + 345);
    ASSERT_TRUE(arbrt::deadlineToNs(CLOCK_MONOTONIC, timespec{0, 0}, &out));
    EXPECT_EQ(out, 0u);
    ASSERT_TRUE(arbrt::deadlineToNs(CLOCK_MONOTONIC, timespec{1, 999'999'999}, &out));
    EXPECT_EQ(out, 2 * kSecond - 1);
}

TEST(DeadlineToNs, Realtime_MapsOntoMonotonicTimeline) {
    timespec real;
    clock_gettime(CLOCK_REALTIME, &real);
    const uint64_t before = arbrt::nowNs();
    uint64_t out = 0;
    timespec later = real;
    later.tv_sec += 10;
    ASSERT_TRUE(arbrt::deadlineToNs(CLOCK_REALTIME, later, &out));
    const uint64_t after = arbrt::nowNs();
    // Ten seconds from the realtime "now" we read, give or take the time between the reads.
    EXPECT_LE(out, after + 10 * kSecond);
    EXPECT_GE(out + (after - before) + 1'000'000, before + 10 * kSecond);
    // A realtime deadline in the past is due now, not in the far past or future.
    ASSERT_TRUE(arbrt::deadlineToNs(CLOCK_REALTIME, timespec{1, 0}, &out));
    EXPECT_LE(out, arbrt::nowNs());
    EXPECT_GE(out, before);
}

TEST(DeadlineToNs, BadTimespec_Rejected) {
    uint64_t out = 7;
    EXPECT_FALSE(arbrt::deadlineToNs(CLOCK_MONOTONIC, timespec{1, -1}, &out));
    EXPECT_FALSE(arbrt::deadlineToNs(CLOCK_MONOTONIC, timespec{1, 1'000'000'000}, &out));
    EXPECT_FALSE(arbrt::deadlineToNs(CLOCK_REALTIME, timespec{1, 1'000'000'000}, &out));
    EXPECT_EQ(out, 7u);  // untouched on failure
}

TEST(DeadlineToNs, UnsupportedClock_Rejected) {
    uint64_t out = 7;
    EXPECT_FALSE(arbrt::deadlineToNs(CLOCK_PROCESS_CPUTIME_ID, timespec{1, 0}, &out));
    EXPECT_FALSE(arbrt::deadlineToNs(CLOCK_THREAD_CPUTIME_ID, timespec{1, 0}, &out));
    EXPECT_EQ(out, 7u);
}

TEST(NowNs, BeforeStart_FollowsClockMonotonic) {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    const uint64_t mono = uint64_t(ts.tv_sec) * kSecond + uint64_t(ts.tv_nsec);
    const uint64_t now = arbrt::nowNs();
    EXPECT_GE(now, mono);
    EXPECT_LT(now - mono, kSecond);
    EXPECT_LE(now, arbrt::nowNs());  // never goes back
}

}  // namespace
