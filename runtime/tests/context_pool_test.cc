// The context pool (src/context_pool.h): an exited thread's context is pooled with its stack and
// TCB whatever the pool's size, and the monitor strips those beyond the configured size that sat
// unused through a trim period; once creates find the pool dry, idle carriers keep a reserve of
// equipped contexts, which decays when creates stop.
#include <sys/wait.h>
#include <unistd.h>

#include <arbrt/arbrt.h>
#include <arbrt/embed/fork.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <functional>
#include <vector>

#include "sched/context_pool.h"
#include "test_util.h"

namespace {

using arbrt_test::exitStatusOf;
using arbrt_test::forkWithRuntime;

using arbrt::detail::kReserveAfterContexts;
using arbrt::detail::kReserveMax;
using arbrt::detail::kReserveMin;
using arbrt::detail::reserveAfterDryCreate;
using arbrt::detail::reserveAtPeriodEnd;
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

    // Creates `n` threads that all stay alive until every one has started, runs `whileAlive`,
    // then lets them exit and joins them.
    static void runLiveThreads(size_t n = kThreads, const std::function<void()>& whileAlive = {}) {
        arbrt::Semaphore started, release;
        std::vector<arbrt::ThreadId> ids;
        for (size_t i = 0; i < n; ++i) {
            ids.push_back(arbrt::createThreadWith({}, [&] {
                started.post();
                release.wait();
            }));
            ASSERT_TRUE(ids.back());
        }
        for (size_t i = 0; i < n; ++i) started.wait();
        if (whileAlive) whileAlive();
        for (size_t i = 0; i < n; ++i) release.post();
        for (arbrt::ThreadId id : ids) arbrt::join(id);
    }

    // More live threads than every pooled context (shared pool and the cores' caches) can serve,
    // by kThreads: the last kThreads creates, at least, find the pool dry.
    static size_t beyondThePool() {
        const auto counts = sharedPoolCounts();
        return counts.equipped + counts.bare + kKeep + kThreads;
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
    // The reserve the burst built decays too (halved per trim period without a dry create).
    EXPECT_TRUE(arbrt_test::eventually([] {
        const auto counts = sharedPoolCounts();
        return counts.reserveTarget == 0 && counts.equipped <= kKeep;
    }));
    EXPECT_GE(sharedPoolCounts().bare, size_t(kThreads) - 2 * kKeep);
    // Stripped contexts serve new threads again (given a stack and TCB).
    arbrt::ThreadId driver2 = arbrt::createThreadWith({}, [] { runLiveThreads(); });
    ASSERT_TRUE(driver2);
    arbrt::join(driver2);
}

TEST_F(ContextPool, Refill_IdleCarriersEquipTheReserveAfterDryCreates) {
    size_t targetWhileAlive = 0;
    bool refilled = false, reachedTarget = false;
    const uint64_t refilledBefore = sharedPoolCounts().refilled;
    arbrt::ThreadId driver = arbrt::createThreadWith({}, [&] {
        runLiveThreads(beyondThePool(), [&] {
            targetWhileAlive = sharedPoolCounts().reserveTarget;
            // Every thread is parked: the carriers are idle and equip the reserve.
            refilled = arbrt_test::eventually(
                [&] { return sharedPoolCounts().refilled > refilledBefore; });
            reachedTarget = arbrt_test::eventually([] {
                const auto counts = sharedPoolCounts();
                return counts.equipped >= counts.reserveTarget;
            });
        });
    });
    ASSERT_TRUE(driver);
    arbrt::join(driver);
    EXPECT_GE(targetWhileAlive, kReserveMin);
    EXPECT_TRUE(refilled);
    EXPECT_TRUE(reachedTarget);
}

TEST_F(ContextPool, Refill_ReservedContextsServeCreatesAsNewThreads) {
    // A reserve context's TCB never held a thread: its occupant must get libc's per-thread set-up
    // (ctype tables: isalpha would crash without them) and a zero errno.
    arbrt::ThreadId driver = arbrt::createThreadWith({}, [&] {
        runLiveThreads(beyondThePool(), [&] {
            ASSERT_TRUE(arbrt_test::eventually([] {
                const auto counts = sharedPoolCounts();
                return counts.reserveTarget > 0 && counts.equipped >= counts.reserveTarget;
            }));
            std::vector<arbrt::ThreadId> ids;
            std::atomic<int> good{0};
            const size_t n = sharedPoolCounts().equipped;
            for (size_t i = 0; i < n; ++i) {
                ids.push_back(arbrt::createThreadWith({}, [&] {
                    if (std::isalpha('a') && !std::isalpha('1') && errno == 0) good.fetch_add(1);
                }));
                ASSERT_TRUE(ids.back());
            }
            for (arbrt::ThreadId id : ids) arbrt::join(id);
            EXPECT_EQ(size_t(good.load()), n);
        });
    });
    ASSERT_TRUE(driver);
    arbrt::join(driver);
}

TEST_F(ContextPool, Fork_ChildStartsWithoutTheParentsReserve) {
    arbrt::ThreadId driver = arbrt::createThreadWith({}, [] { runLiveThreads(beyondThePool()); });
    ASSERT_TRUE(driver);
    arbrt::join(driver);
    ASSERT_GT(sharedPoolCounts().reserveTarget, 0u);
    const pid_t pid = forkWithRuntime(1);
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        if (sharedPoolCounts().reserveTarget != 0) _exit(20);
        // The parent's pooled contexts serve the child.
        int value = 0;
        arbrt::ThreadId t = arbrt::createThread([&] { value = 42; });
        if (!t || arbrt::join(t) != 0 || value != 42) _exit(21);
        _exit(0);
    }
    EXPECT_EQ(exitStatusOf(pid), 0);
}

TEST(ContextPoolLogic, ReserveAfterDryCreate_NoneForProgramsWithFewThreads) {
    EXPECT_EQ(reserveAfterDryCreate(0, 1), 0u);
    EXPECT_EQ(reserveAfterDryCreate(0, kReserveAfterContexts - 1), 0u);
    EXPECT_EQ(reserveAfterDryCreate(0, kReserveAfterContexts), kReserveMin);
}

TEST(ContextPoolLogic, ReserveAfterDryCreate_DoublesUpToTheCap) {
    EXPECT_EQ(reserveAfterDryCreate(kReserveMin, 1000), 2 * kReserveMin);
    EXPECT_EQ(reserveAfterDryCreate(kReserveMax / 2 + 1, 1000), kReserveMax);
    EXPECT_EQ(reserveAfterDryCreate(kReserveMax, 1000), kReserveMax);
}

TEST(ContextPoolLogic, ReserveAtPeriodEnd_KeptWhileDryHalvedToZeroOtherwise) {
    EXPECT_EQ(reserveAtPeriodEnd(kReserveMax, true), kReserveMax);
    EXPECT_EQ(reserveAtPeriodEnd(kReserveMax, false), kReserveMax / 2);
    EXPECT_EQ(reserveAtPeriodEnd(2 * kReserveMin, false), kReserveMin);
    EXPECT_EQ(reserveAtPeriodEnd(kReserveMin, false), 0u);
    EXPECT_EQ(reserveAtPeriodEnd(0, false), 0u);
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
