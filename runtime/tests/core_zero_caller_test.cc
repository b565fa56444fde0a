// RuntimeOptions::coreZeroAwaitsCaller: a standalone start creates no carrier thread for core 0;
// the embedder's thread that runs main() becomes it (runCallerAsCoreZero), or the first thread
// creation starts it as usual when it comes first (a program's constructor creating threads).
#include <arbrt/embed/host.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "test_util.h"

namespace {

using arbrt_test::kernelThreads;

long kernelThreadId() {
    return syscall(SYS_gettid);
}

arbrt::RuntimeOptions awaitingOptions(int cores) {
    arbrt::RuntimeOptions options;
    options.numCores = cores;
    options.coreZeroAwaitsCaller = true;
    return options;
}

// What a death-test child checks; a failed check ends it with status 3 (the tests expect 0 or 5).
void require(bool condition) {
    if (!condition) _exit(3);
}

struct Observed {
    long callerTid = 0;
    int threadsBefore = 0;
    bool prepared = false;
};

// Runs on the caller's kernel thread (one core: nothing steals it), which no new kernel thread
// joined; creates a second thread and leaves: the second is the last to exit.
bool prepareTwoThreads(void* raw) {
    auto* seen = static_cast<Observed*>(raw);
    seen->prepared = true;
    arbrt::ThreadId first = arbrt::createThread([seen] {
        require(kernelThreadId() == seen->callerTid);
        require(kernelThreads() <= seen->threadsBefore);
        arbrt::ThreadId second =
            arbrt::createThread([seen] { require(kernelThreadId() == seen->callerTid); });
        require(bool(second));
        arbrt::detach(second);
    });
    if (!first) return false;
    arbrt::detach(first);
    return true;
}

// A prepare that creates nothing: records in *called that it ran and says `kSucceeds`.
template <bool kSucceeds>
bool notePrepare(void* called) {
    *static_cast<bool*>(called) = true;
    return kSucceeds;
}

TEST(CoreZeroCaller, Start_MakesNoCarrierThread) {
    const int before = kernelThreads();
    ASSERT_FALSE(arbrt::start(awaitingOptions(2)).has_value());
    EXPECT_LE(kernelThreads(), before);
    // A creation from this kernel thread comes first: core 0's carrier thread starts for it.
    std::atomic<long> ranOn{0};
    arbrt::ThreadId t = arbrt::createThread([&] { ranOn = kernelThreadId(); });
    ASSERT_TRUE(bool(t));
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_NE(ranOn.load(), kernelThreadId());  // on a carrier thread of its own
    // Too late for the caller: it is told so without its prepare running.
    Observed seen;
    EXPECT_FALSE(arbrt::runCallerAsCoreZero(prepareTwoThreads, &seen));
    EXPECT_FALSE(seen.prepared);
    EXPECT_TRUE(arbrt::stop());
    EXPECT_TRUE(arbrt_test::eventually([&] { return kernelThreads() <= before; }));
}

// Nothing ever ran core 0: the runtime stops all the same.
TEST(CoreZeroCaller, Stop_WithoutACarrierForCoreZero) {
    const int before = kernelThreads();
    ASSERT_FALSE(arbrt::start(awaitingOptions(4)).has_value());
    EXPECT_LE(kernelThreads(), before);
    EXPECT_TRUE(arbrt::stop());
    EXPECT_LE(kernelThreads(), before);
}

// The caller runs the threads prepare made, and the last one's exit ends the process with 0.
TEST(CoreZeroCaller, RunCaller_RunsThreadsAndExitsWithTheLast) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            Observed seen;
            seen.callerTid = kernelThreadId();
            seen.threadsBefore = kernelThreads();
            require(!arbrt::start(awaitingOptions(1)).has_value());
            arbrt::runCallerAsCoreZero(prepareTwoThreads, &seen);
            _exit(4);  // returned: it did not run core 0
        },
        ::testing::ExitedWithCode(0), "");
}

// A thread's exit() ends the process with its status, as main() returning does.
TEST(CoreZeroCaller, RunCaller_ExitStatusOfAThreadIsTheProcesss) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            require(!arbrt::start(awaitingOptions(2)).has_value());
            arbrt::runCallerAsCoreZero(
                [](void*) { return bool(arbrt::createThread([] { std::exit(5); })); }, nullptr);
            _exit(4);
        },
        ::testing::ExitedWithCode(5), "");
}

// A prepare that fails gets core 0's carrier started as usual: threads created afterwards run.
TEST(CoreZeroCaller, FailedPrepare_StartsTheCarrierThread) {
    ASSERT_FALSE(arbrt::start(awaitingOptions(2)).has_value());
    bool called = false;
    EXPECT_FALSE(arbrt::runCallerAsCoreZero(notePrepare<false>, &called));
    EXPECT_TRUE(called);
    std::atomic<long> ranOn{0};
    arbrt::ThreadId t = arbrt::createThread([&] { ranOn = kernelThreadId(); });
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_NE(ranOn.load(), 0);
    EXPECT_NE(ranOn.load(), kernelThreadId());
    EXPECT_TRUE(arbrt::stop());
}

// A start without the option: the caller is told core 0 has its carrier.
TEST(CoreZeroCaller, WithoutTheOption_CallerIsRefused) {
    arbrt::RuntimeOptions options;
    options.numCores = 2;
    ASSERT_FALSE(arbrt::start(options).has_value());
    bool called = false;
    EXPECT_FALSE(arbrt::runCallerAsCoreZero(notePrepare<true>, &called));
    EXPECT_FALSE(called);
    EXPECT_TRUE(arbrt::stop());
}

}  // namespace
