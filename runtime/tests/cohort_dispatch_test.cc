// Cohort dispatch on a running runtime: on one core, threads parked at two resume points and woken
// interleaved run grouped by resume point under --dispatch cohort, and in wake-up order under fifo.
// Deterministic by the single-core FIFO argument (test_util.h): the driver wakes all six while it
// holds the only core, then blocks; the core alone decides the order.
#include <atomic>
#include <vector>

#include "arbrt/embed/resume_point.h"
#include "test_util.h"

namespace {

using arbrt_test::eventually;

// Each sleeper parks on its own word inside one of two functions, so its resume point is that
// function's call site: noinline keeps the two call sites distinct.
struct Sleeper {
    std::atomic<uint32_t> word{0};
};

[[gnu::noinline]] void parkAtStageA(Sleeper* s) {
    ARBRT_RESUME_POINT();
    while (s->word.load() == 0)
        arbrt::park(
            &s->word, [&] { return s->word.load() == 0; }, arbrt::kNoDeadline);
}

[[gnu::noinline]] void parkAtStageB(Sleeper* s) {
    ARBRT_RESUME_POINT();
    while (s->word.load() == 0)
        arbrt::park(
            &s->word, [&] { return s->word.load() == 0; }, arbrt::kNoDeadline);
}

// Starts six sleepers (stages A B A B A B by index 0..5), wakes them in index order while this
// thread holds the core, then joins them; returns the order in which they ran after the wake-up.
// Waking from a user thread hands each woken thread the core's runNext slot and moves the one
// before it to the queue (as Go does), so the core holds runNext = 5 and queue = 0 1 2 3 4.
std::vector<int> runInterleavedStages() {
    constexpr int kThreads = 6;
    Sleeper sleepers[kThreads];
    std::vector<int> order;
    std::atomic<int> parked{0};
    std::vector<arbrt::ThreadId> threads;
    for (int i = 0; i < kThreads; ++i) {
        threads.push_back(arbrt::createThreadWith(arbrt_test::pinnedTo(0), [&, i] {
            parked.fetch_add(1);
            if (i % 2 == 0) {
                parkAtStageA(&sleepers[i]);
            } else {
                parkAtStageB(&sleepers[i]);
            }
            order.push_back(i);  // one core: the threads never run at once
        }));
    }
    EXPECT_TRUE(eventually([&] {
        for (Sleeper& s : sleepers)
            if (arbrt::parkedCount(&s.word) != 1) return false;
        return true;
    }));
    for (Sleeper& s : sleepers) {
        s.word.store(1);
        arbrt::unpark(&s.word, 1);
    }
    for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
    return order;
}

// Runs `body` on a user thread of a one-core runtime with the given dispatch.
template <typename Body>
void onOneCore(arbrt::Dispatch dispatch, Body body) {
    arbrt::RuntimeOptions options;
    options.numCores = 1;
    options.dispatch = dispatch;
    options.cohortMaxThreads = 8;
    options.cohortMaxNs = arbrt::kMaxCohortNs;  // bounded by threads only: timing-independent
    const auto err = arbrt::start(options);
    ASSERT_FALSE(err.has_value()) << err->message;
    const arbrt::ThreadId driver = arbrt::createThreadWith(arbrt_test::pinnedTo(0), body);
    EXPECT_EQ(arbrt::join(driver), 0);
    EXPECT_TRUE(arbrt::stop());
}

TEST(CohortDispatch, TakeNext_GroupsThreadsParkedAtTheSameResumePoint) {
    std::vector<int> order;
    onOneCore(arbrt::Dispatch::cohort, [&] { order = runInterleavedStages(); });
    // 5 (runNext, stage B) starts a cohort: 1 and 3 follow; then FIFO takes 0 (A): 2 and 4.
    EXPECT_EQ(order, (std::vector<int>{5, 1, 3, 0, 2, 4}));
}

TEST(CohortDispatch, TakeNext_FifoRunsInWakeUpOrder) {
    std::vector<int> order;
    onOneCore(arbrt::Dispatch::fifo, [&] { order = runInterleavedStages(); });
    EXPECT_EQ(order, (std::vector<int>{5, 0, 1, 2, 3, 4}));
}

TEST(CohortDispatch, TakeNext_CohortBoundEndsAGroupAndFifoResumes) {
    std::vector<int> order;
    arbrt::RuntimeOptions options;
    options.numCores = 1;
    options.dispatch = arbrt::Dispatch::cohort;
    options.cohortMaxThreads = 2;
    options.cohortMaxNs = arbrt::kMaxCohortNs;
    const auto err = arbrt::start(options);
    ASSERT_FALSE(err.has_value()) << err->message;
    const arbrt::ThreadId driver =
        arbrt::createThreadWith(arbrt_test::pinnedTo(0), [&] { order = runInterleavedStages(); });
    EXPECT_EQ(arbrt::join(driver), 0);
    EXPECT_TRUE(arbrt::stop());
    // 5 and 1 (stage B, bound 2); FIFO 0 and its cohort partner 2 (A, bound 2); FIFO 3 (B: no B
    // left to follow it); FIFO 4.
    EXPECT_EQ(order, (std::vector<int>{5, 1, 0, 2, 3, 4}));
}

}  // namespace
