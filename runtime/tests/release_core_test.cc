// releaseCore/acquireCore: every thread leaves a released core (runnable, running, blocked and
// sleeping ones), none runs there until it is acquired again, blocked and sleeping ones still
// complete, error codes, activeCores(), and stealing refilling an acquired core.
//
// How "never observes the released core" is checked without races: the main thread publishes the
// phase only after releaseCore() has returned and before acquireCore() is called; a thread reads
// the phase first and its core second, with no switch in between, so if it read "released" it was
// already running on its current core while the core was released.
#include <cerrno>
#include <thread>
#include <vector>

#include "sched/runtime_state.h"
#include "test_util.h"

namespace {

using arbrt_test::coreSet;
using arbrt_test::eventually;
using arbrt_test::kMillisecond;
using arbrt_test::pinnedTo;

class ReleaseCore : public arbrt_test::RuntimeTest<4> {};
class ReleaseCoreTwo : public arbrt_test::RuntimeTest<2> {};
class ReleaseCoreOne : public arbrt_test::RuntimeTest<1> {};

TEST_F(ReleaseCoreTwo, ReleaseAcquire_ErrorCodes) {
    EXPECT_EQ(arbrt::activeCores(), coreSet({0, 1}));
    EXPECT_EQ(arbrt::releaseCore(-1), EINVAL);
    EXPECT_EQ(arbrt::releaseCore(2), EINVAL);
    EXPECT_EQ(arbrt::acquireCore(-1), EINVAL);
    EXPECT_EQ(arbrt::acquireCore(2), EINVAL);
    EXPECT_EQ(arbrt::acquireCore(0), EALREADY);  // active already
    EXPECT_EQ(arbrt::releaseCore(1), 0);
    EXPECT_EQ(arbrt::activeCores(), coreSet({0}));
    EXPECT_EQ(arbrt::releaseCore(1), EALREADY);
    EXPECT_EQ(arbrt::releaseCore(0), EBUSY);  // the last active core
    EXPECT_EQ(arbrt::activeCores(), coreSet({0}));
    EXPECT_EQ(arbrt::acquireCore(1), 0);
    EXPECT_EQ(arbrt::acquireCore(1), EALREADY);
    EXPECT_EQ(arbrt::activeCores(), coreSet({0, 1}));
    EXPECT_EQ(arbrt::releaseCore(0), 0);  // any core may go, as long as one stays
    EXPECT_EQ(arbrt::releaseCore(1), EBUSY);
    EXPECT_EQ(arbrt::activeCores(), coreSet({1}));
    const arbrt::ThreadId t = arbrt::createThread([] {});  // still runs somewhere
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(arbrt::acquireCore(0), 0);
}

TEST_F(ReleaseCoreOne, Release_OnlyCoreIsBusy) {
    EXPECT_EQ(arbrt::releaseCore(0), EBUSY);
    EXPECT_EQ(arbrt::activeCores(), coreSet({0}));
}

enum Phase : int { kSetup = 0, kReleased = 1, kAcquiring = 2, kDone = 3 };
constexpr int kReleasedCore = 2;

// Shared state of the scenario. Counters are written by the threads, read by the main thread.
struct Scenario {
    std::atomic<int> phase{kSetup};
    std::atomic<int> violations{0};       // ran on the released core while it was released
    std::atomic<int> setupOnReleased{0};  // threads that were on the core before the release
    std::atomic<int> ready{0};
    std::atomic<int> runnableAfterRelease{0};  // loop iterations done while released
    std::atomic<int> blockedDone{0}, sleepersDone{0};
    std::atomic<int> ranThereAfterAcquire{0};
    arbrt::Mutex mutex;
    arbrt::CondVar cv;
    bool wake = false;  // guarded by mutex

    // Checks the invariant on the calling thread; returns its core.
    int check() {
        const int p = phase.load();
        const int core = arbrt::currentCore();
        if (p == kReleased && core == kReleasedCore) violations.fetch_add(1);
        if (p >= kAcquiring && core == kReleasedCore) ranThereAfterAcquire.fetch_add(1);
        return core;
    }
};

TEST_F(ReleaseCore, Release_MovesEveryThreadAndAcquireRefills) {
    Scenario s;
    // Cores 0, 1 and 3 are kept busy by pinned spinners, so until the release nobody steals from
    // core 2: everything created there is still there when it is released.
    std::vector<arbrt::ThreadId> spinners;
    for (int core : {0, 1, 3}) {
        spinners.push_back(arbrt::createThreadWith(pinnedTo(core), [&s] {
            s.ready.fetch_add(1);
            while (s.phase.load() != kDone) {
                s.check();
                arbrt::yield();
            }
        }));
    }
    ASSERT_TRUE(eventually([&] { return s.ready.load() == 3; }));
    std::vector<arbrt::ThreadId> threads;
    // Runnable: yield loops (one of them is the running thread at any moment), with a longer
    // computation between yields so the release often catches one mid-run.
    for (int i = 0; i < 6; ++i) {
        threads.push_back(arbrt::createThreadOn(kReleasedCore, [&s, i] {
            if (s.check() == kReleasedCore) s.setupOnReleased.fetch_add(1);
            s.ready.fetch_add(1);
            while (s.phase.load() != kDone) {
                arbrt_test::burn(i == 0 ? 200'000 : 2'000);
                s.check();
                if (s.phase.load() == kReleased) s.runnableAfterRelease.fetch_add(1);
                arbrt::yield();
            }
        }));
    }
    // Blocked on a CondVar.
    for (int i = 0; i < 6; ++i) {
        threads.push_back(arbrt::createThreadOn(kReleasedCore, [&s] {
            s.mutex.lock();
            if (s.check() == kReleasedCore) s.setupOnReleased.fetch_add(1);
            s.ready.fetch_add(1);
            while (!s.wake) s.cv.wait(s.mutex);
            s.mutex.unlock();
            for (int k = 0; k < 50; ++k) {
                s.check();
                arbrt::yield();
            }
            s.blockedDone.fetch_add(1);
        }));
    }
    // Sleeping: long enough that the release happens while they sleep (if it does not, they are
    // simply runnable; the invariant is the same).
    for (int i = 0; i < 6; ++i) {
        threads.push_back(arbrt::createThreadOn(kReleasedCore, [&s, i] {
            if (s.check() == kReleasedCore) s.setupOnReleased.fetch_add(1);
            s.ready.fetch_add(1);
            arbrt::sleepFor(uint64_t(20 + i) * kMillisecond);
            for (int k = 0; k < 20; ++k) {
                s.check();
                arbrt::sleepFor(100'000);
                s.check();
            }
            s.sleepersDone.fetch_add(1);
        }));
    }
    ASSERT_TRUE(eventually([&] { return s.ready.load() == 3 + 18; }));
    EXPECT_EQ(s.setupOnReleased.load(), 18) << "threads left core 2 before the release";

    ASSERT_EQ(arbrt::releaseCore(kReleasedCore), 0);
    s.phase = kReleased;
    EXPECT_EQ(arbrt::activeCores(), coreSet({0, 1, 3}));
    EXPECT_EQ(arbrt::releaseCore(kReleasedCore), EALREADY);

    // Threads created now must not land there either, even when asked for.
    std::atomic<int> newOnReleased{0};
    auto lateBody = [&] {
        if (arbrt::currentCore() == kReleasedCore) newOnReleased.fetch_add(1);
    };
    const arbrt::ThreadId late = arbrt::createThread(lateBody);
    const arbrt::ThreadId lateOn = arbrt::createThreadOn(kReleasedCore, lateBody);
    ASSERT_TRUE(late);
    ASSERT_TRUE(lateOn);
    EXPECT_EQ(arbrt::join(late), 0);
    EXPECT_EQ(arbrt::join(lateOn), 0);
    EXPECT_EQ(newOnReleased.load(), 0);

    s.mutex.lock();
    s.wake = true;
    s.cv.notifyAll();
    s.mutex.unlock();
    ASSERT_TRUE(
        eventually([&] { return s.blockedDone.load() == 6 && s.sleepersDone.load() == 6; }));
    ASSERT_TRUE(eventually([&] { return s.runnableAfterRelease.load() >= 6 * 20; }));
    EXPECT_EQ(s.violations.load(), 0);

    s.phase = kAcquiring;
    ASSERT_EQ(arbrt::acquireCore(kReleasedCore), 0);
    EXPECT_EQ(arbrt::activeCores(), coreSet({0, 1, 2, 3}));
    // The runnable threads queue behind the spinners on cores 0, 1 and 3: the idle core 2 steals.
    EXPECT_TRUE(eventually([&] { return s.ranThereAfterAcquire.load() > 0; }))
        << "nothing ran on the acquired core";
    s.phase = kDone;
    for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
    for (arbrt::ThreadId t : spinners) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(s.violations.load(), 0);
}

TEST_F(ReleaseCore, Release_FromUserThreadOnAnotherCore) {
    std::atomic<int> rc{-1}, violations{0};
    std::atomic<bool> released{false}, stop{false};
    std::vector<arbrt::ThreadId> workers;
    for (int i = 0; i < 12; ++i) {
        workers.push_back(arbrt::createThreadOn(3, [&] {
            while (!stop.load()) {
                const bool r = released.load();
                if (r && arbrt::currentCore() == 3) violations.fetch_add(1);
                arbrt::yield();
            }
        }));
    }
    const arbrt::ThreadId releaser = arbrt::createThreadWith(pinnedTo(0), [&] {
        rc = arbrt::releaseCore(3);  // parks this user thread until core 3 is empty
        released = true;
    });
    EXPECT_EQ(arbrt::join(releaser), 0);
    EXPECT_EQ(rc.load(), 0);
    EXPECT_EQ(arbrt::activeCores(), coreSet({0, 1, 2}));
    // Let every worker run a while on the remaining cores.
    std::atomic<int> laps{0};
    const arbrt::ThreadId counter = arbrt::createThread([&] {
        for (int i = 0; i < 200; ++i) {
            arbrt::yield();
            laps.fetch_add(1);
        }
    });
    EXPECT_EQ(arbrt::join(counter), 0);
    stop = true;
    for (arbrt::ThreadId t : workers) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(violations.load(), 0);
    EXPECT_EQ(arbrt::acquireCore(3), 0);
}

TEST_F(ReleaseCore, ReleaseAcquire_RepeatedWhileThreadsWork) {
    // Release and re-acquire cores over and over while threads compute, sleep and block; all work
    // completes and the totals are exact, and after each acquire stealing refills the core.
    constexpr int kThreads = 64, kCycles = 30;
    arbrt::Mutex mutex;
    long counter = 0;  // guarded by mutex
    std::atomic<long> iterations{0};
    std::atomic<long> ranOn[4] = {};
    std::atomic<bool> stop{false};
    std::vector<arbrt::ThreadId> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.push_back(arbrt::createThread([&, t] {
            for (int i = 0; !stop.load(); ++i) {
                mutex.lock();
                ++counter;
                mutex.unlock();
                iterations.fetch_add(1);
                ranOn[arbrt::currentCore()].fetch_add(1);
                if ((i + t) % 16 == 0) arbrt::sleepFor(20'000);
                arbrt::yield();
            }
        }));
    }
    for (int cycle = 0; cycle < kCycles; ++cycle) {
        const int core = 1 + cycle % 3;
        ASSERT_EQ(arbrt::releaseCore(core), 0);
        EXPECT_FALSE(arbrt::activeCores().test(size_t(core)));
        const long before = ranOn[core].load();
        ASSERT_EQ(arbrt::acquireCore(core), 0);
        ASSERT_TRUE(eventually([&] { return ranOn[core].load() != before; }))
            << "nothing ran on core " << core << " after it was acquired";
    }
    stop = true;
    for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(counter, iterations.load());
    EXPECT_EQ(arbrt::activeCores(), coreSet({0, 1, 2, 3}));
}

// A core released again right after it was acquired, before its carrier has left the parked state
// of the first release, must still be released (the carrier must not miss the new request).
TEST_F(ReleaseCoreTwo, Release_AgainRightAfterAcquire) {
    for (int i = 0; i < 100; ++i) {
        std::atomic<int> rc{-1};
        std::thread releaser([&] { rc = arbrt::releaseCore(1); });
        const bool returned = eventually([&] { return rc.load() != -1; });
        if (!returned) arbrt::acquireCore(1);  // unsticks the parked carrier
        releaser.join();
        ASSERT_TRUE(returned) << "releaseCore right after acquireCore never returned (cycle " << i
                              << ")";
        ASSERT_EQ(rc.load(), 0);
        ASSERT_EQ(arbrt::acquireCore(1), 0);
    }
}

}  // namespace

namespace {

// A timer moved off a released core to a core whose carrier sleeps with no deadline of its own (its
// heap is empty, and as the higher-numbered sleeper it keeps no other core's): that carrier must
// be woken to take the deadline, or the sleeper never wakes (in arbiter mode, a once-a-millisecond
// look only hid this). The sleeper sleeps on core 0 (core 1 is kept busy meanwhile, so it cannot
// steal it first and take the timer). Core 1's carrier is woken (and falls asleep again) while
// core 0's sleeps, until it is seen asleep without a deadline; then the release alone has to wake
// it.
TEST_F(ReleaseCoreTwo, Release_MovedTimerWakesACarrierAsleepWithoutDeadline) {
    using arbrt::detail::gRuntime;
    arbrt::ThreadAttributes home;
    home.core = 0;
    home.allowed = arbrt_test::coreSet({0, 1});
    std::atomic<bool> asleep{false}, woke{false};
    std::atomic<int> sleptOn{-1};
    arbrt::detail::Core& first = gRuntime->cores[0];
    arbrt::detail::Core& second = gRuntime->cores[1];
    arbrt::ThreadId sleeper{};
    {
        arbrt_test::CoreOccupier occupier({1});
        ASSERT_TRUE(occupier.ready());
        sleeper = arbrt::createThreadWith(home, [&] {
            sleptOn.store(arbrt::currentCore());
            asleep.store(true);
            arbrt::sleepFor(1'000 * kMillisecond);
            woke.store(true);
        });
        ASSERT_TRUE(eventually([&] { return asleep.load() && first.sleeping.load() != 0; }));
    }
    ASSERT_EQ(sleptOn.load(), 0);
    bool ready = false;
    for (int attempt = 0; attempt < 100 && !ready && !woke.load(); ++attempt) {
        arbrt::detail::wakeCarrier(&second);
        ASSERT_TRUE(eventually([&] { return second.sleeping.load() != 0; }));
        ready = first.sleeping.load() != 0 && second.sleepUntilTsc.load() == ~uint64_t{0};
    }
    ASSERT_TRUE(ready) << "core 1 never slept without a deadline while core 0 slept";
    ASSERT_FALSE(woke.load());
    ASSERT_EQ(arbrt::releaseCore(0), 0);
    EXPECT_TRUE(eventually([&] { return woke.load(); })) << "the moved timer never fired";
    EXPECT_EQ(arbrt::join(sleeper), 0);
    EXPECT_EQ(arbrt::acquireCore(0), 0);
}

}  // namespace
