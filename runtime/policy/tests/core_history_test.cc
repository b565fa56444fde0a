// CoreHistory: differences of cumulative counters between rounds, and set changes.
#include <gtest/gtest.h>

#include "core_history.h"

namespace arbrt::policy::detail {
namespace {

// Counters of one core, unnamed fields zero.
CoreCounters counters(int id, uint64_t granted, uint64_t busy = 0, uint64_t runnable = 0,
                      uint64_t enqueued = 0, uint64_t dequeued = 0) {
    return CoreCounters{id, granted, busy, runnable, enqueued, dequeued};
}

TEST(CoreHistory, Record_FirstRoundIsABaseline) {
    CoreHistory history;
    history.beginRound();
    std::optional<CoreStep> step = history.record(counters(3, 100, 50));
    ASSERT_TRUE(step);
    EXPECT_FALSE(step->continued);
    EXPECT_EQ(history.coresThisRound(), 1u);
    EXPECT_FALSE(history.sameCoresAsPrevious());
}

TEST(CoreHistory, Record_NextRoundGivesDifferences) {
    CoreHistory history;
    history.beginRound();
    history.record(counters(0, 100, 50, 80));
    history.beginRound();
    std::optional<CoreStep> step = history.record(counters(0, 300, 90, 400));
    ASSERT_TRUE(step);
    EXPECT_TRUE(step->continued);
    EXPECT_EQ(step->grantedDelta(), 200u);
    EXPECT_EQ(step->busyDelta(), 40u);
    EXPECT_EQ(step->runnableDelta(), 320u);
    EXPECT_TRUE(history.sameCoresAsPrevious());
}

TEST(CoreHistory, Record_CounterGoingBackStartsAfresh) {
    CoreHistory history;
    history.beginRound();
    history.record(counters(0, 100, 50));
    history.beginRound();
    std::optional<CoreStep> step = history.record(counters(0, 10, 5));
    ASSERT_TRUE(step);
    EXPECT_FALSE(step->continued);
    history.beginRound();
    step = history.record(counters(0, 20, 6));
    ASSERT_TRUE(step);
    EXPECT_TRUE(step->continued);
    EXPECT_EQ(step->grantedDelta(), 10u);
}

TEST(CoreHistory, Record_RepeatedAndOutOfRangeIdsIgnored) {
    CoreHistory history;
    history.beginRound();
    EXPECT_TRUE(history.record(counters(1, 0)));
    EXPECT_FALSE(history.record(counters(1, 5)));
    EXPECT_FALSE(history.record(counters(-1, 0)));
    EXPECT_FALSE(history.record(counters(kMaxCoreIds, 0)));
    EXPECT_TRUE(history.record(counters(kMaxCoreIds - 1, 0)));
    EXPECT_EQ(history.coresThisRound(), 2u);
}

TEST(CoreHistory, Record_CoreAbsentForARoundStartsAfresh) {
    CoreHistory history;
    history.beginRound();
    history.record(counters(0, 100));
    history.beginRound();
    history.beginRound();
    std::optional<CoreStep> step = history.record(counters(0, 200));
    ASSERT_TRUE(step);
    EXPECT_FALSE(step->continued);
}

TEST(CoreHistory, SameCoresAsPrevious_SeesGrantsReleasesAndSwaps) {
    CoreHistory history;
    auto round = [&](std::initializer_list<int> ids) {
        history.beginRound();
        for (int id : ids) history.record(counters(id, 0));
        return history.sameCoresAsPrevious();
    };
    round({0, 1});
    EXPECT_TRUE(round({1, 0}));      // order does not matter
    EXPECT_FALSE(round({0, 1, 2}));  // grant
    EXPECT_FALSE(round({0, 1}));     // release
    EXPECT_FALSE(round({0, 2}));     // swap: same count, other core
    EXPECT_TRUE(round({0, 2}));
    EXPECT_FALSE(round({}));
    EXPECT_TRUE(round({}));
}

}  // namespace
}  // namespace arbrt::policy::detail
