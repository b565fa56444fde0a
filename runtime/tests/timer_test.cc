// Timers: sleepFor/sleepUntil never return early, many concurrent sleepers all wake, sleepers on
// one core wake in deadline order, and a signal during a sleep neither ends it nor is lost.
#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "test_util.h"

namespace {

using arbrt_test::eventually;
using arbrt_test::kMicrosecond;
using arbrt_test::kMillisecond;
using arbrt_test::pinnedTo;

class Timer : public arbrt_test::RuntimeTest<4> {};
class TimerOneCore : public arbrt_test::RuntimeTest<1> {};

const uint64_t kDurations[] = {
    0, 1, 100, kMicrosecond, 10 * kMicrosecond, 100 * kMicrosecond, kMillisecond, 3 * kMillisecond};

// Sleeps for each duration and counts the sleeps that returned before it had passed.
int countEarlySleeps() {
    int early = 0;
    for (uint64_t d : kDurations) {
        for (int i = 0; i < 5; ++i) {
            const uint64_t before = arbrt::nowNs();
            arbrt::sleepFor(d);
            if (arbrt::nowNs() < before + d) ++early;
            const uint64_t deadline = arbrt::nowNs() + d;
            arbrt::sleepUntil(deadline);
            if (arbrt::nowNs() < deadline) ++early;
        }
    }
    return early;
}

TEST_F(Timer, SleepFor_NeverReturnsEarly) {
    std::atomic<int> early{-1};
    const arbrt::ThreadId t = arbrt::createThread([&] { early = countEarlySleeps(); });
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(early.load(), 0);
}

TEST_F(Timer, SleepFor_KernelThreadNeverReturnsEarly) {
    EXPECT_EQ(countEarlySleeps(), 0);
}

TEST_F(Timer, SleepUntil_PastDeadlineReturns) {
    const arbrt::ThreadId t = arbrt::createThread([] {
        arbrt::sleepUntil(0);
        arbrt::sleepUntil(arbrt::nowNs() - 1);
        arbrt::sleepFor(0);
    });
    EXPECT_EQ(arbrt::join(t), 0);
}

TEST_F(Timer, SleepFor_ManyConcurrentSleepersAllWake) {
    constexpr int kSleepers = 500;
    std::atomic<int> early{0}, woke{0};
    std::vector<arbrt::ThreadId> threads;
    for (int i = 0; i < kSleepers; ++i) {
        threads.push_back(arbrt::createThread([&, i] {
            for (int k = 0; k < 4; ++k) {
                const uint64_t d = uint64_t((i * 7 + k * 13) % 50) * 100 * kMicrosecond / 10;
                const uint64_t before = arbrt::nowNs();
                arbrt::sleepFor(d);  // up to 0.5 ms
                if (arbrt::nowNs() < before + d) early.fetch_add(1);
            }
            woke.fetch_add(1);
        }));
    }
    for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(woke.load(), kSleepers);
    EXPECT_EQ(early.load(), 0);
}

TEST_F(TimerOneCore, SleepUntil_SameCoreWakesInDeadlineOrder) {
    // Sleepers created in shuffled order with distinct deadlines 20 us apart must wake in deadline
    // order. The order is only defined if every sleeper was asleep before the first deadline; a
    // round where the host stalled us past it is retried with a wider margin.
    constexpr int kSleepers = 64;
    constexpr uint64_t kGap = 20 * kMicrosecond;
    std::vector<int> ranks(kSleepers);
    std::iota(ranks.begin(), ranks.end(), 0);
    std::shuffle(ranks.begin(), ranks.end(), std::mt19937(12345));
    bool checked = false;
    for (int attempt = 0; attempt < 5 && !checked; ++attempt) {
        const uint64_t margin = (5u << attempt) * kMillisecond;
        std::vector<int> order;  // ranks in wake order; one core: never touched concurrently
        bool allAsleepInTime = false;
        const arbrt::ThreadId driver = arbrt::createThreadWith(pinnedTo(0), [&] {
            const uint64_t base = arbrt::nowNs() + margin;
            std::atomic<int> asleep{0};
            std::vector<arbrt::ThreadId> sleepers;
            for (int rank : ranks) {
                sleepers.push_back(arbrt::createThreadWith(pinnedTo(0), [&, rank] {
                    asleep.fetch_add(1);
                    arbrt::sleepUntil(base + uint64_t(rank) * kGap);
                    order.push_back(rank);
                }));
            }
            while (asleep.load() != kSleepers) arbrt::yield();  // FIFO: all parked by now
            allAsleepInTime = arbrt::nowNs() < base;
            for (arbrt::ThreadId t : sleepers) arbrt::join(t);
        });
        ASSERT_EQ(arbrt::join(driver), 0);
        ASSERT_EQ(order.size(), size_t(kSleepers));
        if (!allAsleepInTime) continue;
        checked = true;
        std::vector<int> expected(kSleepers);
        std::iota(expected.begin(), expected.end(), 0);
        EXPECT_EQ(order, expected);
    }
    EXPECT_TRUE(checked) << "every attempt was stalled past its first deadline";
}

TEST_F(Timer, SleepFor_SignalDuringSleepIsKeptForNextBlock) {
    // A sleep is not a block: a signal that arrives meanwhile neither ends it early nor is lost
    // (it is the permit for the next block()).
    constexpr uint64_t kSleep = 5 * kMillisecond;
    std::atomic<bool> sleeping{false}, blockReturned{false};
    std::atomic<uint64_t> slept{0};
    const arbrt::ThreadId t = arbrt::createThread([&] {
        const uint64_t before = arbrt::nowNs();
        sleeping = true;
        arbrt::sleepFor(kSleep);
        slept = arbrt::nowNs() - before;
        arbrt::block();  // the signal sent during the sleep lets this return
        blockReturned = true;
    });
    ASSERT_TRUE(eventually([&] { return sleeping.load(); }));
    arbrt::signal(t);
    const bool ok = eventually([&] { return blockReturned.load(); });
    if (!ok) arbrt::signal(t);  // the signal was lost: unstick it
    EXPECT_TRUE(ok) << "a signal that arrived during sleepFor was lost";
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_GE(slept.load(), kSleep);
}

TEST_F(Timer, SleepFor_SleepersOnEveryCoreWake) {
    // Pinned sleepers on every core at once: each core's timers fire, idle or not.
    std::atomic<int> early{0};
    std::vector<arbrt::ThreadId> threads;
    for (int core = 0; core < 4; ++core) {
        for (int i = 0; i < 20; ++i) {
            threads.push_back(arbrt::createThreadWith(pinnedTo(core), [&, i] {
                const uint64_t d = uint64_t(i + 1) * 50 * kMicrosecond;
                const uint64_t before = arbrt::nowNs();
                arbrt::sleepFor(d);
                if (arbrt::nowNs() < before + d) early.fetch_add(1);
            }));
        }
    }
    for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(early.load(), 0);
}

}  // namespace
