// The context pool (src/context_pool.h): an exited thread's context is pooled with its stack and
// TCB whatever the pool's size, and the monitor strips those beyond the configured size that sat
// unused through a trim period.
#include <arbrt/arbrt.h>

#include <vector>

#include "sched/context_pool.h"
#include "test_util.h"

namespace {

using arbrt::detail::sharedPoolCounts;

constexpr size_t kPerCore = 4;
constexpr int kCores = 2;
constexpr size_t kKeep = kPerCore * kCores;  // equipped contexts no trim strips
constexpr int kThreads = 300;                // well beyond kKeep plus the cores' caches

// The runtime with a small pool (kPerCore per core), so a few hundred threads overflow it.
class ContextPool : public ::testing::Test {
  protected:
    void SetUp() override {
        arbrt::RuntimeOptions options;
        options.numCores = kCores;
        options.pooledContextsPerCore = kPerCore;
        const auto err = arbrt::start(options);
        ASSERT_FALSE(err.has_value()) << err->message;
    }
    void TearDown() override { EXPECT_TRUE(arbrt::stop()) << "user threads still alive"; }

    // Creates kThreads threads that all stay alive until every one has started, then lets them
    // exit and joins them.
    static void runLiveThreads() {
        arbrt::Semaphore started, release;
        std::vector<arbrt::ThreadId> ids;
        for (int i = 0; i < kThreads; ++i) {
            ids.push_back(arbrt::createThreadWith({}, [&] {
                started.post();
                release.wait();
            }));
            ASSERT_TRUE(ids.back());
        }
        for (int i = 0; i < kThreads; ++i) started.wait();
        for (int i = 0; i < kThreads; ++i) release.post();
        for (arbrt::ThreadId id : ids) arbrt::join(id);
    }
};

TEST_F(ContextPool, Release_KeepsStacksBeyondThePoolSize) {
    // A trim strips at most the contexts that were pooled before and unused since (the lowest
    // count of its period), never those of threads that lived during it: all but the cores'
    // caches (kKeep at most) are in the shared pool, equipped, right after the joins.
    arbrt::ThreadId driver = arbrt::createThreadWith({}, [] { runLiveThreads(); });
    ASSERT_TRUE(driver);
    arbrt::join(driver);
    EXPECT_GE(sharedPoolCounts().equipped, size_t(kThreads) - kKeep);
}

TEST_F(ContextPool, Trim_StripsUnusedContextsDownToThePoolSize) {
    arbrt::ThreadId driver = arbrt::createThreadWith({}, [] { runLiveThreads(); });
    ASSERT_TRUE(driver);
    arbrt::join(driver);
    // Nothing creates threads now: within two trim periods the monitor strips the excess.
    EXPECT_TRUE(arbrt_test::eventually([] { return sharedPoolCounts().equipped <= kKeep; }));
    EXPECT_GE(sharedPoolCounts().bare, size_t(kThreads) - 2 * kKeep);
    // Stripped contexts serve new threads again (given a stack and TCB).
    arbrt::ThreadId driver2 = arbrt::createThreadWith({}, [] { runLiveThreads(); });
    ASSERT_TRUE(driver2);
    arbrt::join(driver2);
}

TEST(ContextPoolLogic, ContextsToTrim_NothingAtOrBelowThePoolSize) {
    EXPECT_EQ(arbrt::detail::contextsToTrim(100, 8, 8), 0u);
    EXPECT_EQ(arbrt::detail::contextsToTrim(0, 0, 8), 0u);
}

TEST(ContextPoolLogic, ContextsToTrim_OnlyThoseUnusedThroughThePeriod) {
    // 1,000 pooled, at least 300 of them never taken during the period: those 300 go.
    EXPECT_EQ(arbrt::detail::contextsToTrim(300, 1000, 8), 300u);
    // A pool in constant use (it ran dry once) keeps everything.
    EXPECT_EQ(arbrt::detail::contextsToTrim(0, 1000, 8), 0u);
}

TEST(ContextPoolLogic, ContextsToTrim_NeverBelowThePoolSize) {
    EXPECT_EQ(arbrt::detail::contextsToTrim(1000, 1000, 8), 992u);
    EXPECT_EQ(arbrt::detail::contextsToTrim(50, 20, 8), 12u);
}

}  // namespace
