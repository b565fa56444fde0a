// A user thread that overflows its stack hits the guard page and the process dies with SIGSEGV and
// a clear message, instead of corrupting memory.
#include <sys/resource.h>

#include <climits>
#include <csignal>

#include "test_util.h"

namespace {

class StackOverflowDeathTest : public arbrt_test::RuntimeTest<2> {};

volatile int gDepthLimit = INT_MAX;  // opaque to the compiler: the recursion is not "infinite"

// Recurses with a 1 KiB frame per level until the stack runs out.
__attribute__((noinline)) int recurse(int depth) {
    volatile char frame[1024];
    frame[0] = char(depth);
    if (depth >= gDepthLimit) return frame[0];
    return recurse(depth + 1) + frame[0];
}

// The death test's child: no core file for the deliberate crash, then overflow a 64 KiB stack.
void overflowAUserThread() {
    const rlimit noCore{0, 0};
    setrlimit(RLIMIT_CORE, &noCore);
    arbrt::ThreadAttributes attributes;
    attributes.stackSize = 64 * 1024;
    const arbrt::ThreadId t = arbrt::createThreadWith(attributes, [] { recurse(0); });
    arbrt::join(t);
}

TEST_F(StackOverflowDeathTest, UserThread_OverflowDiesWithMessage) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(overflowAUserThread(), ::testing::KilledBySignal(SIGSEGV),
                "stack overflow in a user thread");
}

TEST_F(StackOverflowDeathTest, UserThread_DeepButBoundedRecursionSurvives) {
    // The same recursion within its stack is fine: the guard page only catches real overflows.
    arbrt::ThreadAttributes attributes;
    attributes.stackSize = 256 * 1024;
    std::atomic<bool> done{false};
    const arbrt::ThreadId t = arbrt::createThreadWith(attributes, [&] {
        gDepthLimit = 150;  // ~160 KiB of frames
        recurse(0);
        gDepthLimit = INT_MAX;
        done = true;
    });
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_TRUE(done.load());
}

}  // namespace
