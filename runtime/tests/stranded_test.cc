// Work stranded behind a runner that computes without calling the runtime: a timer due on its core
// and a thread it woke into its core's runNext slot. Neither may wait for the runner to switch:
// another core fires the timer and steals the thread (natively the kernel would preempt).
//
// Ordering without sleeps: threads pinned to core 0 run in FIFO order there, and a CoreOccupier on
// core 1 keeps that core from stealing until the test lets it go.
#include "test_util.h"

namespace {

using arbrt_test::CoreOccupier;
using arbrt_test::eventually;
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

}  // namespace
