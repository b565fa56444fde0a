// Waiting in place (carrier.cc, waitInPlace): a thread that parks with nothing else runnable on its
// core keeps its stack and TCB while its carrier runs the idle pass there; its own wake-up resumes
// it with no switch (RuntimeStats::resumedInPlace), anything else gets one direct switch, and the
// core's dispatcher still gets what only it does (a release). Since the thread stays kParking
// meanwhile, a signal from another core only leaves a permit, and must also wake the carrier if it
// sleeps (wakeWaiterInPlace): the racing tests signal at whatever point the carrier has reached
// (entering the wait, polling, asleep on its futex or in the netpoll), many rounds each.
//
// Nothing sleeps to order events: "asleep in place" is read from the core's `sleeping` word and the
// thread's `waitingOnCore`, and every wait is a bounded spin (arbrt_test::eventually, a hang
// guard), so a lost wake-up fails the test instead of slowing it.
#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <atomic>

#include "arbrt/io.h"
#include "sched/runtime_state.h"
#include "test_util.h"

namespace {

using arbrt_test::eventually;
using arbrt_test::pinnedTo;

uint64_t resumedInPlace() {
    return arbrt::stats().resumedInPlace;
}

// Whether `t` waits in place on `core` and that core's carrier sleeps (on its futex or in the
// netpoll): a permit must now wake it.
bool asleepInPlace(arbrt::ThreadId t, int core) {
    const arbrt::detail::Core& c = arbrt::detail::gRuntime->cores[core];
    return t.context->waitingOnCore.load() == core && c.sleeping.load() != 0;
}

class WaitInPlaceOne : public arbrt_test::RuntimeTest<1> {};
class WaitInPlaceTwo : public arbrt_test::RuntimeTest<2> {};

// Alone on its core, a sleeping thread's own timer ends each wait: every park but those that fall
// back to the dispatcher resumes in place. Without waiting in place the count stays 0.
TEST_F(WaitInPlaceOne, OwnTimer_ResumesWithoutASwitch) {
    constexpr int kRounds = 200;
    const uint64_t before = resumedInPlace();
    arbrt::ThreadId sleeper = arbrt::createThread([] {
        for (int i = 0; i < kRounds; ++i) arbrt::sleepFor(20'000);
    });
    ASSERT_EQ(arbrt::join(sleeper), 0);
    EXPECT_GE(resumedInPlace() - before, uint64_t(kRounds / 2));
}

// A thread whose stack leaves too little room below its park (64 KiB) parks through the
// dispatcher: the idle pass and the signal frames taken there must not overflow it.
TEST_F(WaitInPlaceOne, SmallStack_ParksThroughTheDispatcher) {
    arbrt::ThreadAttributes small;
    small.stackSize = 48 * 1024;
    const uint64_t before = resumedInPlace();
    int rounds = 0;
    arbrt::ThreadId sleeper = arbrt::createThreadWith(small, [&] {
        for (; rounds < 50; ++rounds) arbrt::sleepFor(20'000);
    });
    ASSERT_EQ(arbrt::join(sleeper), 0);
    EXPECT_EQ(rounds, 50);
    EXPECT_EQ(resumedInPlace() - before, 0u);
}

// The thread's CPU clock stops while its carrier waits on its stack, and the core's busy time does
// not count the wait: charged as running, both would read the whole 100 ms sleep.
TEST_F(WaitInPlaceOne, LongWait_ChargedToNeitherTheThreadNorTheCoresBusyTime) {
    arbrt::enableCpuClocks();
    std::atomic<uint64_t> cpuNs{0};
    const uint64_t before = resumedInPlace();
    const uint64_t busyBefore = arbrt::coreBusyNs(0);
    arbrt::ThreadId sleeper = arbrt::createThread([&] {
        const uint64_t start = arbrt::threadCpuNs(arbrt::self());
        arbrt::sleepFor(100'000'000);
        cpuNs = arbrt::threadCpuNs(arbrt::self()) - start;
    });
    ASSERT_EQ(arbrt::join(sleeper), 0);
    ASSERT_EQ(resumedInPlace() - before, 1u) << "the sleep did not wait in place";
    EXPECT_LT(cpuNs.load(), 20'000'000u);
    EXPECT_LT(arbrt::coreBusyNs(0) - busyBefore, 20'000'000u);
}

// A thread on core 0 parks; core 1 signals it once core 0's carrier sleeps in place, so only the
// wake-up wakeWaiterInPlace() sends can end the sleep. Hangs without it.
TEST_F(WaitInPlaceTwo, SignalWhileTheCarrierSleeps_WakesIt) {
    constexpr int kRounds = 300;
    std::atomic<int> woken{0};
    const uint64_t before = resumedInPlace();
    arbrt::ThreadId waiter = arbrt::createThreadWith(pinnedTo(0), [&] {
        for (int i = 0; i < kRounds; ++i) {
            arbrt::block();
            woken.fetch_add(1);
        }
    });
    bool ok = true;
    arbrt::ThreadId signaller = arbrt::createThreadWith(pinnedTo(1), [&] {
        for (int i = 0; i < kRounds && ok; ++i) {
            ok = eventually([&] { return woken.load() == i && asleepInPlace(waiter, 0); });
            arbrt::signal(waiter);
        }
    });
    ASSERT_EQ(arbrt::join(signaller), 0);
    ASSERT_TRUE(ok) << "the waiter never slept in place (round " << woken.load() << ")";
    ASSERT_TRUE(eventually([&] { return woken.load() == kRounds; }))
        << "a signal left a permit and nobody woke the carrier (" << woken.load() << " of "
        << kRounds << ")";
    ASSERT_EQ(arbrt::join(waiter), 0);
    EXPECT_EQ(resumedInPlace() - before, uint64_t(kRounds));
}

// The same without waiting for the sleep: each signal lands wherever core 0's carrier is (the
// thread still switching out, the idle pass polling, about to sleep, asleep). Every signal must be
// seen: a lost one hangs the waiter at its block().
TEST_F(WaitInPlaceTwo, SignalRacingTheWait_NeverLost) {
    constexpr int kRounds = 5000;
    std::atomic<int> woken{0};
    arbrt::ThreadId waiter = arbrt::createThreadWith(pinnedTo(0), [&] {
        for (int i = 0; i < kRounds; ++i) {
            arbrt::block();
            woken.fetch_add(1);
        }
    });
    bool ok = true;
    arbrt::ThreadId signaller = arbrt::createThreadWith(pinnedTo(1), [&] {
        for (int i = 0; i < kRounds && ok; ++i) {
            arbrt::signal(waiter);
            ok = eventually([&] { return woken.load() > i; });
        }
    });
    ASSERT_EQ(arbrt::join(signaller), 0);
    EXPECT_TRUE(ok) << "signal " << woken.load() << " was lost";
    ASSERT_EQ(arbrt::join(waiter), 0);
}

// A thread waits for a pipe on core 0; the write comes from core 1 once core 0's carrier sleeps in
// place (as the netpoller, the only idle carrier left): the event readies the waiter itself, which
// resumes in place with the pipe readable, round after round.
TEST_F(WaitInPlaceTwo, ReadinessOfTheWaitersOwnFd_ResumesIt) {
    constexpr int kRounds = 200;
    int fds[2];
    ASSERT_EQ(pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
    std::atomic<int> served{0};
    std::atomic<int> failures{0};
    const uint64_t before = resumedInPlace();
    arbrt::ThreadId waiter = arbrt::createThreadWith(pinnedTo(0), [&] {
        for (int i = 0; i < kRounds; ++i) {
            arbrt::FdInterest in{fds[0], EPOLLIN, 0};
            char byte;
            if (arbrt::waitForFds(&in, 1, arbrt::kWaitForever, nullptr) != 1 ||
                !(in.ready & EPOLLIN) || read(fds[0], &byte, 1) != 1) {
                failures.fetch_add(1);
            }
            served.fetch_add(1);
        }
    });
    bool ok = true;
    arbrt::ThreadId writer = arbrt::createThreadWith(pinnedTo(1), [&] {
        for (int i = 0; i < kRounds && ok; ++i) {
            ok = eventually([&] { return served.load() == i && asleepInPlace(waiter, 0); });
            ok = ok && write(fds[1], "x", 1) == 1;
        }
    });
    ASSERT_EQ(arbrt::join(writer), 0);
    ASSERT_TRUE(ok) << "the waiter never slept in place (round " << served.load() << ")";
    ASSERT_TRUE(eventually([&] { return served.load() == kRounds; }));
    ASSERT_EQ(arbrt::join(waiter), 0);
    EXPECT_EQ(failures.load(), 0);
    EXPECT_EQ(resumedInPlace() - before, uint64_t(kRounds));
    close(fds[0]);
    close(fds[1]);
}

// A core released while a thread waits in place there: the wait ends (the release is the
// dispatcher's), releaseCore() returns, and the thread, signalled afterwards, runs on the core
// left. The thread may run anywhere (an idle core may steal it before its first run), so the core
// released is whichever it waits on.
TEST_F(WaitInPlaceTwo, ReleaseWhileWaiting_CoreGoesAndTheThreadRunsElsewhere) {
    std::atomic<int> ranOn{-1};
    arbrt::ThreadId waiter = arbrt::createThread([&] {
        arbrt::block();
        ranOn = arbrt::currentCore();
    });
    int core = -1;
    ASSERT_TRUE(eventually([&] {
        core = waiter.context->waitingOnCore.load();
        return core >= 0 && asleepInPlace(waiter, core);
    }));
    ASSERT_EQ(arbrt::releaseCore(core), 0);
    arbrt::signal(waiter);
    ASSERT_EQ(arbrt::join(waiter), 0);
    EXPECT_EQ(ranOn.load(), 1 - core);
    EXPECT_EQ(arbrt::acquireCore(core), 0);
}

}  // namespace
