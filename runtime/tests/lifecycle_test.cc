// start()/stop(): option validation, double start, stop with live threads, restart.
#include <sched.h>

#include <cerrno>

#include "arbrt/embed/platform.h"
#include "test_util.h"

namespace {

// Starts with `options` and expects an invalidArgument error that explains itself, with nothing
// started.
void expectInvalid(const arbrt::RuntimeOptions& options) {
    const auto err = arbrt::start(options);
    ASSERT_TRUE(err.has_value());
    EXPECT_EQ(err->code, arbrt::Errc::invalidArgument);
    EXPECT_FALSE(err->message.empty());
    EXPECT_FALSE(arbrt::isRunning());
}

TEST(Lifecycle, Start_NegativeNumCoresIsInvalid) {
    arbrt::RuntimeOptions options;
    options.numCores = -1;
    expectInvalid(options);
}

TEST(Lifecycle, Start_TooManyCoresIsInvalid) {
    arbrt::RuntimeOptions options;
    options.numCores = arbrt::kMaxCores + 1;
    expectInvalid(options);
}

TEST(Lifecycle, Start_IdleSpinTooLargeIsInvalid) {
    arbrt::RuntimeOptions options;
    options.numCores = 2;
    options.idleSpinNs = 3'600 * arbrt_test::kSecond;  // an idle core must sleep eventually
    expectInvalid(options);
}

TEST(Lifecycle, Start_StackSizeOutOfRangeIsInvalid) {
    arbrt::RuntimeOptions options;
    options.numCores = 2;
    options.defaultStackSize = 1024;
    expectInvalid(options);
    options.defaultStackSize = size_t(1) << 40;
    expectInvalid(options);
}

TEST(Lifecycle, Start_TwiceIsAlreadyRunning) {
    arbrt::RuntimeOptions options;
    options.numCores = 2;
    ASSERT_FALSE(arbrt::start(options).has_value());
    const auto err = arbrt::start(options);
    ASSERT_TRUE(err.has_value());
    EXPECT_EQ(err->code, arbrt::Errc::alreadyRunning);
    EXPECT_TRUE(arbrt::isRunning());
    EXPECT_EQ(arbrt::numCores(), 2);  // the first start's runtime is untouched
    EXPECT_TRUE(arbrt::stop());
    EXPECT_FALSE(arbrt::isRunning());
}

TEST(Lifecycle, Start_ZeroCoresMeansOnePerAllowedCpu) {
    cpu_set_t set;
    ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    arbrt::RuntimeOptions options;
    options.numCores = 0;
    ASSERT_FALSE(arbrt::start(options).has_value());
    EXPECT_EQ(arbrt::numCores(), CPU_COUNT(&set));
    EXPECT_TRUE(arbrt::stop());
}

TEST(Lifecycle, Start_CreateJoinStop) {
    arbrt::RuntimeOptions options;
    options.numCores = 2;
    ASSERT_FALSE(arbrt::start(options).has_value());
    EXPECT_TRUE(arbrt::isRunning());
    int x = 0;
    const arbrt::ThreadId t = arbrt::createThread([&] { x = 42; });
    ASSERT_TRUE(t);
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(x, 42);
    EXPECT_TRUE(arbrt::stop());
    EXPECT_FALSE(arbrt::isRunning());
}

TEST(Lifecycle, Start_RestartsAfterStop) {
    for (int round = 0; round < 3; ++round) {
        arbrt::RuntimeOptions options;
        options.numCores = 2 + round;
        ASSERT_FALSE(arbrt::start(options).has_value());
        EXPECT_EQ(arbrt::numCores(), 2 + round);
        std::atomic<int> ran{0};
        std::vector<arbrt::ThreadId> threads;
        for (int i = 0; i < 100; ++i) threads.push_back(arbrt::createThread([&] { ++ran; }));
        for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
        EXPECT_EQ(ran.load(), 100);
        ASSERT_TRUE(arbrt::stop());
    }
}

TEST(Lifecycle, Stop_FalseWhileThreadsLive) {
    arbrt::RuntimeOptions options;
    options.numCores = 2;
    ASSERT_FALSE(arbrt::start(options).has_value());
    arbrt::Semaphore release;
    const arbrt::ThreadId t = arbrt::createThread([&] { release.wait(); });
    EXPECT_FALSE(arbrt::stop());
    EXPECT_TRUE(arbrt::isRunning());  // stopping nothing
    EXPECT_EQ(arbrt::stats().liveThreads, 1u);
    release.post();
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_TRUE(arbrt::stop());
}

TEST(Lifecycle, Spawn_NotRunningIsEperm) {
    ASSERT_FALSE(arbrt::isRunning());
    int err = 0;
    const arbrt::ThreadId t = arbrt::spawn(
        {}, [](void*) -> void* { return nullptr; }, nullptr, &err);
    EXPECT_FALSE(t);
    EXPECT_EQ(err, EPERM);
    EXPECT_FALSE(arbrt::createThread([] {}));
}

// The diagnostic check (arbrun doctor) and start() agree: the same glibc is accepted by both, or
// start() refuses with the reason the check gives.
TEST(Lifecycle, GlibcLayoutSupported_AgreesWithStart) {
    std::string why;
    const bool supported = arbrt::glibcLayoutSupported(&why);
    EXPECT_FALSE(arbrt::glibcVersion().empty());
    arbrt::RuntimeOptions options;
    options.numCores = 1;
    const auto err = arbrt::start(options);
    if (supported) {
        ASSERT_FALSE(err.has_value()) << err->message;
        EXPECT_TRUE(arbrt::stop());
    } else {
        ASSERT_TRUE(err.has_value());
        EXPECT_EQ(err->code, arbrt::Errc::unsupportedPlatform);
        EXPECT_EQ(err->message, why);
    }
}

}  // namespace
