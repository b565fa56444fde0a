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
#include "monitor/io_poller.h"
#include "sched/runtime_state.h"
#include "test_util.h"

namespace {

using arbrt_test::eventually;
using arbrt_test::pinnedTo;

uint64_t resumedInPlace() {
    return arbrt::stats().resumedInPlace;
}

// Whether `t` waits in place on `core` and that core's carrier sleeps (in the netpoll, the only
// sleep a wait in place takes): a permit must now wake it.
bool asleepInPlace(arbrt::ThreadId t, int core) {
    const arbrt::detail::Core& c = arbrt::detail::gRuntime->cores[core];
    return t.context->waitingOnCore.load() == core && c.sleeping.load() != 0;
}

// Whether `t` has parked through the dispatcher (kParked), as a thread does whose core was idle
// while another carrier held the netpoller role.
bool parked(arbrt::ThreadId t) {
    return (t.context->runState.load() & arbrt::detail::kPhaseMask) == arbrt::detail::kParked;
}

// A thread on core 0 that blocks `rounds` times, counting each wake-up in `woken`.
arbrt::ThreadId blockRoundsOnCoreZero(int rounds, std::atomic<int>& woken) {
    return arbrt::createThreadWith(pinnedTo(0), [rounds, &woken] {
        for (int i = 0; i < rounds; ++i) {
            arbrt::block();
            woken.fetch_add(1);
        }
    });
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
// wake-up wakeWaiterInPlace() sends can end the sleep. Hangs without it. The first park may find
// core 1 the netpoller (idle before the signaller came) and go through the dispatcher; from then
// on core 1 is busy and core 0 sleeps in place every round.
TEST_F(WaitInPlaceTwo, SignalWhileTheCarrierSleeps_WakesIt) {
    constexpr int kRounds = 300;
    std::atomic<int> woken{0};
    const uint64_t before = resumedInPlace();
    arbrt::ThreadId waiter = blockRoundsOnCoreZero(kRounds, woken);
    bool ok = true;
    arbrt::ThreadId signaller = arbrt::createThreadWith(pinnedTo(1), [&] {
        for (int i = 0; i < kRounds && ok; ++i) {
            ok = eventually([&] {
                return woken.load() == i &&
                       (asleepInPlace(waiter, 0) || (i == 0 && parked(waiter)));
            });
            arbrt::signal(waiter);
        }
    });
    ASSERT_EQ(arbrt::join(signaller), 0);
    ASSERT_TRUE(ok) << "the waiter never slept in place (round " << woken.load() << ")";
    ASSERT_TRUE(eventually([&] { return woken.load() == kRounds; }))
        << "a signal left a permit and nobody woke the carrier (" << woken.load() << " of "
        << kRounds << ")";
    ASSERT_EQ(arbrt::join(waiter), 0);
    EXPECT_GE(resumedInPlace() - before, uint64_t(kRounds - 1));
}

// The same without waiting for the sleep: each signal lands wherever core 0's carrier is (the
// thread still switching out, the idle pass polling, about to sleep, asleep). Every signal must be
// seen: a lost one hangs the waiter at its block().
TEST_F(WaitInPlaceTwo, SignalRacingTheWait_NeverLost) {
    constexpr int kRounds = 5000;
    std::atomic<int> woken{0};
    arbrt::ThreadId waiter = blockRoundsOnCoreZero(kRounds, woken);
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
// resumes in place with the pipe readable, round after round (the first wait may park, as above).
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
            ok = eventually([&] {
                return served.load() == i &&
                       (asleepInPlace(waiter, 0) || (i == 0 && parked(waiter)));
            });
            ok = ok && write(fds[1], "x", 1) == 1;
        }
    });
    ASSERT_EQ(arbrt::join(writer), 0);
    ASSERT_TRUE(ok) << "the waiter never slept in place (round " << served.load() << ")";
    ASSERT_TRUE(eventually([&] { return served.load() == kRounds; }));
    ASSERT_EQ(arbrt::join(waiter), 0);
    EXPECT_EQ(failures.load(), 0);
    EXPECT_GE(resumedInPlace() - before, uint64_t(kRounds - 1));
    close(fds[0]);
    close(fds[1]);
}

// A core released while a thread waits in place there: the wait ends (the release is the
// dispatcher's), releaseCore() returns, and the thread, signalled afterwards, runs on the core
// left. Core 0 is kept busy, so core 1, where the thread starts, is the only idle one: it sleeps as
// the netpoller, the only sleep a wait in place takes.
TEST_F(WaitInPlaceTwo, ReleaseWhileWaiting_CoreGoesAndTheThreadRunsElsewhere) {
    arbrt_test::CoreOccupier busy({0});
    std::atomic<int> ranOn{-1};
    arbrt::ThreadAttributes onCoreOne;
    onCoreOne.core = 1;  // starts there, may run anywhere
    arbrt::ThreadId waiter = arbrt::createThreadWith(onCoreOne, [&] {
        arbrt::block();
        ranOn = arbrt::currentCore();
    });
    ASSERT_TRUE(eventually([&] { return asleepInPlace(waiter, 1); }));
    ASSERT_EQ(arbrt::releaseCore(1), 0);
    arbrt::signal(waiter);
    ASSERT_EQ(arbrt::join(waiter), 0);
    EXPECT_EQ(ranOn.load(), 0);
    EXPECT_EQ(arbrt::acquireCore(1), 0);
}

// Two idle cores, a thread waiting for its own pipe on each: a wait in place sleeps only as the
// netpoller (on the futex, its thread's readiness would take two wake-ups), so once both threads
// are quiet at most one is asleep in place, on the netpoller's core, and the other has parked as
// before; both pipes' writes then reach their threads (one resumed in place, one run by whoever
// takes its event). Many rounds, so each core holds the role in some.
TEST_F(WaitInPlaceTwo, TwoIdleCores_OnlyTheNetpollerSleepsInPlace) {
    constexpr int kRounds = 100;
    int fds[2][2];
    ASSERT_EQ(pipe2(fds[0], O_CLOEXEC | O_NONBLOCK), 0);
    ASSERT_EQ(pipe2(fds[1], O_CLOEXEC | O_NONBLOCK), 0);
    std::atomic<int> served[2] = {0, 0};
    std::atomic<int> failures{0};
    arbrt::ThreadId waiters[2];
    for (int core = 0; core < 2; ++core) {
        waiters[core] = arbrt::createThreadWith(pinnedTo(core), [&, core] {
            for (int i = 0; i < kRounds; ++i) {
                arbrt::FdInterest in{fds[core][0], EPOLLIN, 0};
                char byte;
                if (arbrt::waitForFds(&in, 1, arbrt::kWaitForever, nullptr) != 1 ||
                    read(fds[core][0], &byte, 1) != 1) {
                    failures.fetch_add(1);
                }
                served[core].fetch_add(1);
            }
        });
    }
    for (int i = 0; i < kRounds; ++i) {
        ASSERT_TRUE(eventually([&] {
            for (int core = 0; core < 2; ++core) {
                if (served[core].load() != i) return false;
                if (!asleepInPlace(waiters[core], core) && !parked(waiters[core])) return false;
            }
            return true;
        })) << "round "
            << i << ": a waiter never went quiet";
        // The role word and the sleep are read apart: a carrier woken for nothing in between
        // (it drops the role and takes it again) only skips the round's check.
        const int holderBefore = arbrt::detail::netpollHolder();
        const bool asleep[2] = {asleepInPlace(waiters[0], 0), asleepInPlace(waiters[1], 1)};
        if (arbrt::detail::netpollHolder() == holderBefore) {
            for (int core = 0; core < 2; ++core) {
                if (!asleep[core]) continue;
                EXPECT_EQ(holderBefore, core)
                    << "round " << i << ": asleep in place on a core that is not the netpoller";
            }
        }
        ASSERT_EQ(write(fds[0][1], "x", 1), 1);
        ASSERT_EQ(write(fds[1][1], "x", 1), 1);
    }
    for (arbrt::ThreadId t : waiters) ASSERT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(failures.load(), 0);
    for (auto& pipeFds : fds) {
        close(pipeFds[0]);
        close(pipeFds[1]);
    }
}

}  // namespace
