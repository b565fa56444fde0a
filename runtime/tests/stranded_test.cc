// Work stranded behind a runner that computes without calling the runtime: a timer due on its core
// and a thread it woke into its core's runNext slot. Neither may wait for the runner to switch:
// another core fires the timer and steals the thread (natively the kernel would preempt).
//
// Ordering without sleeps: threads pinned to core 0 run in FIFO order there, and a CoreOccupier on
// core 1 keeps that core from stealing until the test lets it go.
#include <pthread.h>
#include <signal.h>

#include <functional>
#include <vector>

#include "sched/runtime_state.h"
#include "test_util.h"

namespace {

using arbrt_test::CoreOccupier;
using arbrt_test::eventually;
using arbrt_test::kHangLimit;
using arbrt_test::kMillisecond;
using arbrt_test::pinnedTo;

class Stranded : public arbrt_test::RuntimeTest<2> {};

// Spins on `flag` with plain loads: no runtime call, so the core is never given up.
void computeUntil(const std::atomic<bool>& flag) {
    while (!flag.load(std::memory_order_acquire)) asm volatile("pause");
}

TEST_F(Stranded, SleepFor_TimerOnComputingCoreFiresElsewhere) {
    std::atomic<bool> woke{false}, spinning{false};
    std::atomic<int> sleptOn{-1}, wokeOn{-1};
    arbrt::ThreadId sleeper{}, spinner{};
    {
        CoreOccupier occupier({1});  // core 1 cannot steal until it is released
        ASSERT_TRUE(occupier.ready());
        arbrt::ThreadAttributes home;
        home.core = 0;  // placed on core 0, but allowed everywhere
        sleeper = arbrt::createThreadWith(home, [&] {
            // The spinner is runnable on our core before we sleep: it runs there once we park,
            // and never gives the core back until we set `woke`.
            spinner = arbrt::createThreadWith(pinnedTo(0), [&] {
                spinning.store(true, std::memory_order_release);
                computeUntil(woke);
            });
            sleptOn = arbrt::currentCore();
            arbrt::sleepFor(kMillisecond);
            wokeOn = arbrt::currentCore();
            woke.store(true, std::memory_order_release);
        });
        ASSERT_TRUE(eventually([&] { return spinning.load(); }));
    }  // core 1 goes idle here
    EXPECT_EQ(arbrt::join(sleeper), 0);
    EXPECT_EQ(arbrt::join(spinner), 0);
    EXPECT_EQ(sleptOn.load(), 0);
    EXPECT_EQ(wokeOn.load(), 1) << "the timer must fire on the idle core, not wait for core 0";
}

TEST_F(Stranded, Wakeup_ThreadWokenByComputingWakerIsStolen) {
    arbrt::Semaphore gate;
    std::atomic<bool> done{false}, wakerComputing{false};
    std::atomic<int> blockedOn{-1}, ranOn{-1};
    arbrt::ThreadId waiter{}, waker{};
    {
        CoreOccupier occupier({1});  // core 1 cannot steal until it is released
        ASSERT_TRUE(occupier.ready());
        arbrt::ThreadAttributes home;
        home.core = 0;
        waiter = arbrt::createThreadWith(home, [&] {
            blockedOn = arbrt::currentCore();
            gate.wait();
            ranOn = arbrt::currentCore();
            done.store(true, std::memory_order_release);
        });
        // Pinned to core 0 and created after the waiter: runs once the waiter has parked there.
        waker = arbrt::createThreadWith(pinnedTo(0), [&] {
            gate.post();  // the waiter goes to core 0's runNext slot, behind us
            wakerComputing.store(true, std::memory_order_release);
            computeUntil(done);
        });
        ASSERT_TRUE(eventually([&] { return wakerComputing.load(); }));
    }  // core 1 goes idle here
    EXPECT_EQ(arbrt::join(waiter), 0);
    EXPECT_EQ(arbrt::join(waker), 0);
    EXPECT_EQ(blockedOn.load(), 0);
    EXPECT_EQ(ranOn.load(), 1) << "the idle core must take the woken thread";
}

// The aimed carrier (gStallCore's: core 0, or a reserved core 2) stops in this handler while it
// polls idle and core 1's sleeps, until the test has made its threads runnable: a deterministic
// stand-in for the host descheduling a polling carrier between two wake-ups (which is how the bug
// showed). Core 0's must also be counted in spinningCores, which a reserved core no longer is.
std::atomic<int> gStall{0};      // 0 idle; 1 stalled while polling; 2 not polling; 3 released
std::atomic<int> gStallCore{0};  // the core whose carrier is signalled (the other test: core 2)
void stallWhilePolling(int) {
    arbrt::detail::RuntimeState& rt = *arbrt::detail::gRuntime;
    const arbrt::detail::Core& mine = rt.cores[gStallCore.load()];
    // In idle() and not asleep: polling (idleSinceTsc is set for the whole idle period).
    const bool polling = mine.idleSinceTsc.load() != 0 && mine.sleeping.load() == 0 &&
                         rt.cores[1].sleeping.load() != 0 &&
                         (gStallCore.load() != 0 || rt.spinningCores.load() != 0);
    if (!polling) {
        gStall.store(2);
        return;
    }
    gStall.store(1);
    const auto limit = std::chrono::steady_clock::now() + kHangLimit;
    while (gStall.load() != 3 && std::chrono::steady_clock::now() < limit) asm volatile("pause");
}

// Installs stallWhilePolling for SIGUSR2, aimed at `core`'s carrier, for one test.
class StallSignal {
  public:
    explicit StallSignal(int core) {
        gStallCore.store(core);
        struct sigaction stall = {};
        stall.sa_handler = stallWhilePolling;
        sigemptyset(&stall.sa_mask);
        installed_ = sigaction(SIGUSR2, &stall, &previous_) == 0;
    }
    ~StallSignal() {
        if (installed_) sigaction(SIGUSR2, &previous_, nullptr);
    }
    StallSignal(const StallSignal&) = delete;
    StallSignal& operator=(const StallSignal&) = delete;
    bool installed() const { return installed_; }

  private:
    struct sigaction previous_ = {};
    bool installed_ = false;
};

// Stops the aimed carrier in stallWhilePolling, posts `gate` twice meanwhile and lets it go.
// True when it was stopped while polling (the round tested something).
bool wakeTwoWhileStalled(arbrt::Semaphore* gate) {
    arbrt::detail::RuntimeState& rt = *arbrt::detail::gRuntime;
    gStall.store(0);
    EXPECT_EQ(pthread_kill(rt.carriers[gStallCore.load()].thread, SIGUSR2), 0);
    EXPECT_TRUE(eventually([] { return gStall.load() != 0; }));
    const bool stalled = gStall.load() == 1;
    gate->post();
    gate->post();
    gStall.store(3);
    return stalled;
}

// Yields (so the monitor never sees core 0 stuck) until one of a round's threads runs on core 1.
void yieldUntilOnCoreOne(std::atomic<bool>* onCoreOne) {
    const auto limit = std::chrono::steady_clock::now() + kHangLimit;
    while (!onCoreOne->load() && std::chrono::steady_clock::now() < limit) {
        if (arbrt::currentCore() == 1) onCoreOne->store(true);
        arbrt::yield();
    }
}

// One round's threads: two that park on `gate` with home core 0 and, once woken, yield until one
// of them runs on core 1; then `runner`, pinned to core 0, which runs once both have parked there
// (FIFO). They are made while core 1 is kept busy, so nothing is stolen before the round starts;
// core 1 goes idle once start() returns (true when all went as planned).
struct WokenPairRound {
    arbrt::Semaphore gate;
    std::atomic<bool> onCoreOne{false};
    std::atomic<int> parked{0};
    std::atomic<bool> runnerRunning{false};
    std::function<void()> runner;
    std::vector<arbrt::ThreadId> threads;

    bool start(const arbrt::CoreSet& allowed, std::function<void()> runnerBody) {
        runner = std::move(runnerBody);
        arbrt::ThreadAttributes home;
        home.core = 0;
        home.allowed = allowed;
        CoreOccupier occupier({1});
        if (!occupier.ready()) return false;
        for (int i = 0; i < 2; ++i) {
            threads.push_back(arbrt::createThreadWith(home, [this] {
                parked.fetch_add(1);
                gate.wait();
                yieldUntilOnCoreOne(&onCoreOne);
            }));
        }
        threads.push_back(arbrt::createThreadWith(arbrt_test::pinnedTo(0), [this] {
            runnerRunning.store(true);
            runner();
        }));
        return eventually([&] { return runnerRunning.load(); }) && parked.load() == 2;
    }

    void joinAll() {
        for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
    }
};

// Idle carriers poll for 5 ms (not 50 us), so that a carrier is still polling when the signal that
// stops it arrives.
template <int kCores>
class LongPoll : public ::testing::Test {
  protected:
    void SetUp() override {
        arbrt::RuntimeOptions options;
        options.numCores = kCores;
        options.idleSpinNs = 5 * kMillisecond;
        const auto err = arbrt::start(options);
        ASSERT_FALSE(err.has_value()) << err->message;
        ASSERT_TRUE(arbrt_test::startEveryCarrier(kCores)) << "the carriers never all ran";
    }
    void TearDown() override { EXPECT_TRUE(arbrt::stop()) << "user threads still alive"; }
};
using StrandedLongPoll = LongPoll<2>;
using StrandedLongPoll3 = LongPoll<3>;

// Two threads made runnable on core 0 while its carrier, idle, still polls and core 1's sleeps.
// A waker skips the sleepers while any carrier polls (that one will look), so the poller must look
// again as it stops polling, or the second thread waits behind the first for good: the two yield
// to each other, so the monitor never finds core 0 stuck. Each round stops core 0's carrier inside
// its poll (stallWhilePolling) while the threads are woken.
TEST_F(StrandedLongPoll, Wakeup_TwoWokenOnAPollingCoreWakeTheSleepingOne) {
    constexpr int kRounds = 50;
    arbrt::detail::RuntimeState& rt = *arbrt::detail::gRuntime;
    const StallSignal stall(0);
    ASSERT_TRUE(stall.installed());
    int stalledRounds = 0;
    for (int round = 0; round < kRounds; ++round) {
        WokenPairRound r;
        std::atomic<bool> driverGo{false};
        // Core 0's runner computes until told: core 0 then goes idle. The two may run anywhere.
        ASSERT_TRUE(r.start({}, [&] { computeUntil(driverGo); }));
        // Core 1 is idle now, with nothing to do: it sleeps.
        ASSERT_TRUE(eventually([&] { return rt.cores[1].sleeping.load() != 0; }));
        driverGo.store(true);  // core 0 goes idle: it polls while its recent gaps were short
        const auto idleLimit = std::chrono::steady_clock::now() + kHangLimit;
        while (rt.spinningCores.load() == 0 && rt.cores[0].sleeping.load() == 0) {
            ASSERT_LT(std::chrono::steady_clock::now(), idleLimit) << "core 0 never went idle";
            asm volatile("pause");  // a yield here could outlast the poll
        }
        stalledRounds += wakeTwoWhileStalled(&r.gate);
        r.joinAll();
        ASSERT_TRUE(r.onCoreOne.load())
            << "round " << round << ": both threads stayed on core 0 while core 1 slept";
    }
    ::testing::Test::RecordProperty("stalledRounds", stalledRounds);
    EXPECT_GT(stalledRounds, 0) << "core 0's carrier was never caught polling: nothing was tested";
}

// The same with a third core reserved for an exclusive thread, polling idle while core 0's runner
// (which yields) keeps core 0 busy: the reserved core never steals, so wakers must not count on it
// as a poller. Before, they skipped the sleeping core 1 because core 2 polled, and core 2's second
// look as it stopped polling found no work it could take: the two woken threads and the runner
// took turns on core 0 for good.
TEST_F(StrandedLongPoll3, Wakeup_APollingReservedCoreDoesNotHoldBackTheSleepingOne) {
    constexpr int kRounds = 40;
    arbrt::detail::RuntimeState& rt = *arbrt::detail::gRuntime;
    const StallSignal stall(2);
    ASSERT_TRUE(stall.installed());
    // The exclusive thread: core 2 is reserved for it; each post runs it once, then its core idles.
    arbrt::Semaphore exclusiveGate;
    std::atomic<bool> exclusiveStop{false};
    std::atomic<int> exclusiveRuns{0};
    arbrt::ThreadAttributes exclusiveAttributes;
    exclusiveAttributes.threadClass = arbrt::ThreadClass::exclusive;
    exclusiveAttributes.core = 2;
    const arbrt::ThreadId exclusive = arbrt::createThreadWith(exclusiveAttributes, [&] {
        for (;;) {
            exclusiveGate.wait();
            if (exclusiveStop.load()) return;
            exclusiveRuns.fetch_add(1);
        }
    });
    ASSERT_EQ(arbrt::reservedCoreOf(exclusive), 2);
    int stalledRounds = 0;
    for (int round = 0; round < kRounds; ++round) {
        WokenPairRound r;
        // Core 0's runner yields along with the two: core 0 stays busy and never looks stuck. The
        // two may run on the shared cores.
        ASSERT_TRUE(
            r.start(arbrt_test::coreSet({0, 1}), [&] { yieldUntilOnCoreOne(&r.onCoreOne); }));
        // Core 1 is idle now, with nothing to do: it sleeps.
        ASSERT_TRUE(eventually([&] { return rt.cores[1].sleeping.load() != 0; }));
        // Core 2 runs its owner and goes idle, a few times in quick succession: its idle gaps
        // are then short, so it polls after the last one (idle_spin.h).
        const auto idleLimit = std::chrono::steady_clock::now() + kHangLimit;
        for (int i = 0; i < 12; ++i) {
            const int runs = exclusiveRuns.load();
            exclusiveGate.post();
            while (exclusiveRuns.load() == runs || rt.cores[2].idleSinceTsc.load() == 0) {
                ASSERT_LT(std::chrono::steady_clock::now(), idleLimit) << "core 2 never went idle";
                asm volatile("pause");  // a yield here could outlast the poll
            }
        }
        // Each post also woke core 1 to balance: it goes back to sleep (its gaps are long).
        while (rt.cores[1].sleeping.load() == 0) {
            ASSERT_LT(std::chrono::steady_clock::now(), idleLimit) << "core 1 never slept again";
            asm volatile("pause");
        }
        stalledRounds += wakeTwoWhileStalled(&r.gate);
        r.joinAll();
        ASSERT_TRUE(r.onCoreOne.load())
            << "round " << round << ": the woken threads stayed on core 0 while core 1 slept";
    }
    exclusiveStop.store(true);
    exclusiveGate.post();
    EXPECT_EQ(arbrt::join(exclusive), 0);
    ::testing::Test::RecordProperty("stalledRounds", stalledRounds);
    EXPECT_GT(stalledRounds, 0) << "core 2's carrier was never caught polling: nothing was tested";
}

}  // namespace
