// Standalone start makes only core 0's carrier; once a second user thread is alive the monitor is
// made, and it makes the others, so a program that never creates a thread costs one kernel thread,
// not one per CPU and a monitor.
#include <atomic>

#include "test_util.h"

namespace {

using arbrt_test::eventually;
using arbrt_test::kernelThreads;

TEST(DeferredCarriers, OneLiveThread_RunsOnCoreZerosCarrierAlone) {
    const int before = kernelThreads();
    arbrt::RuntimeOptions options;
    options.numCores = 4;
    ASSERT_FALSE(arbrt::start(options).has_value());
    std::atomic<int> during{0};
    arbrt::ThreadId only = arbrt::createThread([&] { during = kernelThreads(); });
    EXPECT_EQ(arbrt::join(only), 0);
    // Core 0's carrier, and no more (no monitor either), also after the thread is gone.
    EXPECT_EQ(during.load() - before, 1);
    EXPECT_EQ(kernelThreads() - before, 1);
    EXPECT_TRUE(arbrt::stop());
    EXPECT_TRUE(eventually([&] { return kernelThreads() == before; }));
}

TEST(DeferredCarriers, SecondLiveThread_BringsEveryOtherCarrier) {
    constexpr int kCores = 4;
    const int before = kernelThreads();
    arbrt::RuntimeOptions options;
    options.numCores = kCores;
    ASSERT_FALSE(arbrt::start(options).has_value());
    std::atomic<bool> release{false};
    std::atomic<int> running{0};
    auto waiter = [&] {
        running.fetch_add(1);
        while (!release.load()) arbrt::yield();
    };
    arbrt::ThreadId first = arbrt::createThread(waiter);
    ASSERT_TRUE(eventually([&] { return running.load() == 1; }));
    const int alone = kernelThreads();
    EXPECT_EQ(alone - before, 1);  // core 0's carrier
    arbrt::ThreadId second = arbrt::createThread(waiter);
    EXPECT_TRUE(eventually([&] { return kernelThreads() >= alone + kCores; }));
    EXPECT_EQ(kernelThreads(), alone + kCores)
        << "the monitor and one carrier per deferred core, no more";
    release = true;
    EXPECT_EQ(arbrt::join(first), 0);
    EXPECT_EQ(arbrt::join(second), 0);
    EXPECT_TRUE(arbrt::stop());
    EXPECT_TRUE(eventually([&] { return kernelThreads() == before; }));
}

// One core: nothing is deferred, but the monitor still waits for a second thread (its time slices
// and lending need one), and comes with it.
TEST(DeferredCarriers, OneCore_MonitorComesWithTheSecondThread) {
    const int before = kernelThreads();
    arbrt::RuntimeOptions options;
    options.numCores = 1;
    ASSERT_FALSE(arbrt::start(options).has_value());
    std::atomic<int> alone{0}, withSecond{0};
    arbrt::ThreadId first = arbrt::createThread([&] {
        alone = kernelThreads();
        arbrt::ThreadId second = arbrt::createThread([] {});
        withSecond = kernelThreads();
        EXPECT_EQ(arbrt::join(second), 0);
    });
    EXPECT_EQ(arbrt::join(first), 0);
    EXPECT_EQ(alone.load() - before, 1) << "core 0's carrier only";
    EXPECT_EQ(withSecond.load() - before, 2) << "the carrier and the monitor";
    EXPECT_TRUE(arbrt::stop());
    EXPECT_TRUE(eventually([&] { return kernelThreads() == before; }));
}

// The carriers made later run threads like any other: four threads that each wait until all four
// run at once finish only if four carriers run them.
TEST(DeferredCarriers, LateCarriers_RunThreadsInParallel) {
    constexpr int kCores = 4;
    arbrt::RuntimeOptions options;
    options.numCores = kCores;
    ASSERT_FALSE(arbrt::start(options).has_value());
    EXPECT_TRUE(arbrt_test::startEveryCarrier(kCores));
    EXPECT_TRUE(arbrt::stop());
}

// A first thread that may not run on core 0 brings the carrier it needs (here with every other).
TEST(DeferredCarriers, FirstThreadPinnedElsewhere_Runs) {
    arbrt::RuntimeOptions options;
    options.numCores = 4;
    ASSERT_FALSE(arbrt::start(options).has_value());
    std::atomic<bool> ran{false};
    arbrt::ThreadId t = arbrt::createThreadWith(arbrt_test::pinnedTo(3), [&] { ran = true; });
    EXPECT_TRUE(eventually([&] { return ran.load(); }));
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_TRUE(arbrt::stop());
}

}  // namespace
