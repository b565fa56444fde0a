// The monitor's deep sleep: once every core is quiet (carriers asleep idle, runners in blocking
// calls with nothing queued behind them) it sleeps up to the pool trim's period instead of 10 ms,
// and whatever makes a core busy again wakes it at once. "At once" is checked without a clock: a
// deep sleep the monitor left because it was woken is counted apart from one that ran out
// (RuntimeState::monitorDeepSleepsWoken), and in an idle runtime nothing else wakes it.
#include <unistd.h>

#include "arbrt/io.h"
#include "sched/runtime_state.h"
#include "test_util.h"

namespace {

using arbrt_test::eventually;

class MonitorSleep : public arbrt_test::RuntimeTest<2> {
  protected:
    arbrt::detail::RuntimeState& rt() { return *arbrt::detail::gRuntime; }
    // True once the monitor is inside a deep sleep (or about to be: it stores the flag first).
    bool deepAsleep() {
        return eventually(
            [&] { return rt().monitorDeepSleep.load() && rt().monitorDeepSleeps.load() > 0; });
    }
};

TEST_F(MonitorSleep, DeepSleep_IdleRuntimeSleepsDeep) {
    EXPECT_TRUE(deepAsleep()) << "an idle runtime's monitor never slept deep";
}

TEST_F(MonitorSleep, DeepSleep_WokenCarrierWakesTheMonitor) {
    ASSERT_TRUE(deepAsleep());
    const uint64_t woken = rt().monitorDeepSleepsWoken.load();
    std::atomic<bool> ran{false};
    arbrt::ThreadId t = arbrt::createThread([&] { ran.store(true); });
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_TRUE(ran.load());
    EXPECT_TRUE(eventually([&] { return rt().monitorDeepSleepsWoken.load() > woken; }))
        << "the carrier that woke for the new thread left the monitor asleep";
}

// A runner in a blocking call with nothing queued behind it leaves its core quiet; its return
// makes the core busy again.
TEST_F(MonitorSleep, DeepSleep_ReturnFromBlockingCallWakesTheMonitor) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    std::atomic<bool> inCall{false};
    arbrt::ThreadId reader = arbrt::createThread([&] {
        const uint64_t token = arbrt::enterBlockingCall();
        inCall.store(true);
        char c = 0;
        EXPECT_EQ(read(fds[0], &c, 1), 1);
        arbrt::exitBlockingCall(token);
    });
    ASSERT_TRUE(eventually([&] { return inCall.load(); }));
    ASSERT_TRUE(deepAsleep()) << "a runner blocked with nothing behind it kept the monitor awake";
    const uint64_t woken = rt().monitorDeepSleepsWoken.load();
    ASSERT_EQ(write(fds[1], "x", 1), 1);
    EXPECT_EQ(arbrt::join(reader), 0);
    EXPECT_TRUE(eventually([&] { return rt().monitorDeepSleepsWoken.load() > woken; }))
        << "the blocking call's return left the monitor asleep";
    close(fds[0]);
    close(fds[1]);
}

// A runner computing keeps the monitor's regular looks (it may have to preempt it): no deep sleep
// begins while it runs.
TEST_F(MonitorSleep, DeepSleep_NeverWhileACoreRuns) {
    std::atomic<bool> stop{false}, running{false};
    arbrt::ThreadId spinner = arbrt::createThread([&] {
        running.store(true);
        while (!stop.load(std::memory_order_relaxed)) asm volatile("pause");
    });
    ASSERT_TRUE(eventually([&] { return running.load(); }));
    // Wait out any deep sleep that began before the spinner ran (it was woken by its carrier).
    ASSERT_TRUE(eventually([&] { return !rt().monitorDeepSleep.load(); }));
    const uint64_t before = rt().monitorDeepSleeps.load();
    // Many monitor looks: its period is at most 10 ms, and each look with a core running must
    // not begin a deep sleep. Counted by the spinner's own progress, not by a clock: 200 ms of
    // xorshift work here.
    arbrt_test::burn(100'000'000);
    EXPECT_EQ(rt().monitorDeepSleeps.load(), before);
    stop.store(true);
    EXPECT_EQ(arbrt::join(spinner), 0);
}

}  // namespace
