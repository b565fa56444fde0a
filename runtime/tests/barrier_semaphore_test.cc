// Barrier (exactly one `true` per cycle, nobody passes early, many cycles) and Semaphore (counts,
// tryWait, timed waits, post/wait races).
#include <vector>

#include "sync/wait_queue.h"
#include "test_util.h"

namespace {

using arbrt_test::kMillisecond;
using arbrt_test::kSecond;
using arbrt_test::pinnedTo;

class BarrierTest : public arbrt_test::RuntimeTest<4> {};
class SemaphoreTest : public arbrt_test::RuntimeTest<4> {};

// Runs `threads` participants through `cycles` cycles of one barrier (created with `attributes`)
// and checks that each cycle had exactly one `true` and that nobody left a cycle early.
void checkBarrierCycles(int threads, int cycles, const arbrt::ThreadAttributes& attributes) {
    arbrt::Barrier barrier{unsigned(threads)};
    std::vector<std::atomic<int>> arrivals(static_cast<size_t>(cycles)),
        trues(static_cast<size_t>(cycles));
    std::atomic<int> early{0};
    std::vector<arbrt::ThreadId> ids;
    for (int t = 0; t < threads; ++t) {
        ids.push_back(arbrt::createThreadWith(attributes, [&, t] {
            for (int c = 0; c < cycles; ++c) {
                arrivals[size_t(c)].fetch_add(1);
                if ((c + t) % 7 == 0) arbrt::yield();
                const bool serial = barrier.wait();
                if (arrivals[size_t(c)].load() != threads) early.fetch_add(1);
                if (serial) trues[size_t(c)].fetch_add(1);
            }
        }));
    }
    for (arbrt::ThreadId id : ids) EXPECT_EQ(arbrt::join(id), 0);
    EXPECT_EQ(early.load(), 0);
    int wrongCycles = 0;
    for (int c = 0; c < cycles; ++c) wrongCycles += trues[size_t(c)].load() != 1;
    EXPECT_EQ(wrongCycles, 0);
}

TEST_F(BarrierTest, Wait_ExactlyOneTruePerCycleAcrossCores) {
    checkBarrierCycles(16, 500, arbrt::ThreadAttributes{});
}

TEST_F(BarrierTest, Wait_ExactlyOneTruePerCycleOnOneCore) {
    checkBarrierCycles(8, 300, pinnedTo(2));
}

TEST_F(BarrierTest, Wait_ManyThreadsFewCycles) {
    checkBarrierCycles(500, 10, arbrt::ThreadAttributes{});
}

TEST_F(BarrierTest, Wait_CountOneAlwaysTrue) {
    arbrt::Barrier barrier(1);
    EXPECT_TRUE(barrier.wait());  // kernel thread
    std::atomic<int> trues{0};
    const arbrt::ThreadId t = arbrt::createThread([&] {
        for (int i = 0; i < 100; ++i) trues += barrier.wait();
    });
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(trues.load(), 100);
}

TEST_F(SemaphoreTest, TryWait_CountsDown) {
    arbrt::Semaphore sem(3);
    EXPECT_EQ(sem.value(), 3u);
    EXPECT_TRUE(sem.tryWait());
    EXPECT_TRUE(sem.tryWait());
    EXPECT_TRUE(sem.tryWait());
    EXPECT_FALSE(sem.tryWait());
    EXPECT_EQ(sem.value(), 0u);
    sem.post();
    sem.post();
    EXPECT_EQ(sem.value(), 2u);
    sem.wait();
    EXPECT_EQ(sem.value(), 1u);
    const arbrt::ThreadId t = arbrt::createThread([&] {
        EXPECT_TRUE(sem.tryWait());
        EXPECT_FALSE(sem.tryWait());
    });
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(sem.value(), 0u);
}

// A timed wait on an empty semaphore returns false, not before its deadline, leaving it at zero.
void checkSemaphoreTimeout() {
    arbrt::Semaphore sem;
    const uint64_t deadline = arbrt::nowNs() + 2 * kMillisecond;
    EXPECT_FALSE(sem.waitUntil(deadline));
    EXPECT_GE(arbrt::nowNs(), deadline);
    EXPECT_EQ(sem.value(), 0u);
    EXPECT_FALSE(sem.waitUntil(arbrt::nowNs() - 1));
    sem.post();
    EXPECT_TRUE(sem.waitUntil(arbrt::nowNs() - 1));  // available: no waiting, deadline irrelevant
    EXPECT_EQ(sem.value(), 0u);
}

TEST_F(SemaphoreTest, WaitUntil_TimesOutAtZero) {
    checkSemaphoreTimeout();
    const arbrt::ThreadId t = arbrt::createThread(checkSemaphoreTimeout);
    EXPECT_EQ(arbrt::join(t), 0);
}

TEST_F(SemaphoreTest, Post_WakesBlockedWaiter) {
    arbrt::Semaphore sem;
    std::atomic<int> stage{0};
    const arbrt::ThreadId driver = arbrt::createThreadWith(pinnedTo(1), [&] {
        const arbrt::ThreadId waiter = arbrt::createThreadWith(pinnedTo(1), [&] {
            stage = 1;
            sem.wait();
            stage = 2;
        });
        while (stage.load() != 1) arbrt::yield();
        arbrt::yield();
        EXPECT_EQ(stage.load(), 1);  // still blocked
        sem.post();
        arbrt::yield();
        EXPECT_EQ(stage.load(), 2);  // woken and ran
        arbrt::join(waiter);
        EXPECT_EQ(sem.value(), 0u);
    });
    ASSERT_EQ(arbrt::join(driver), 0);
}

TEST_F(SemaphoreTest, PostWait_RacesKeepTheCount) {
    constexpr int kProducers = 8, kConsumers = 8, kPosts = 5'000;
    arbrt::Semaphore sem;
    std::atomic<long> taken{0}, timeouts{0};
    std::vector<arbrt::ThreadId> threads;
    for (int p = 0; p < kProducers; ++p) {
        threads.push_back(arbrt::createThread([&, p] {
            for (int i = 0; i < kPosts; ++i) {
                sem.post();
                if ((i + p) % 32 == 0) arbrt::yield();
            }
        }));
    }
    for (int c = 0; c < kConsumers; ++c) {
        threads.push_back(arbrt::createThread([&, c] {
            for (int i = 0; i < kPosts; ++i) {
                switch ((i + c) % 3) {
                    case 0:
                        sem.wait();
                        break;
                    case 1:
                        while (!sem.tryWait()) arbrt::yield();
                        break;
                    default:
                        while (!sem.waitUntil(arbrt::nowNs() + 5'000)) timeouts.fetch_add(1);
                        break;
                }
                taken.fetch_add(1);
            }
        }));
    }
    for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(taken.load(), long(kConsumers) * kPosts);
    EXPECT_EQ(sem.value(), 0u);
    RecordProperty("timeouts", int(timeouts.load()));
}

TEST_F(SemaphoreTest, Wait_BoundsConcurrency) {
    constexpr unsigned kSlots = 3;
    arbrt::Semaphore slots(kSlots);
    std::atomic<int> inside{0}, maxInside{0}, over{0};
    std::vector<arbrt::ThreadId> threads;
    for (int t = 0; t < 50; ++t) {
        threads.push_back(arbrt::createThread([&] {
            for (int i = 0; i < 200; ++i) {
                slots.wait();
                const int now = inside.fetch_add(1) + 1;
                if (now > int(kSlots)) over.fetch_add(1);
                int seen = maxInside.load();
                while (now > seen && !maxInside.compare_exchange_weak(seen, now)) {
                }
                arbrt::yield();
                inside.fetch_sub(1);
                slots.post();
            }
        }));
    }
    for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(over.load(), 0);
    EXPECT_LE(maxInside.load(), int(kSlots));
    EXPECT_EQ(slots.value(), kSlots);
}

TEST_F(SemaphoreTest, WaitUntil_SucceedsWhenPosted) {
    arbrt::Semaphore sem;
    std::atomic<int> result{-1};
    const arbrt::ThreadId t =
        arbrt::createThread([&] { result = sem.waitUntil(arbrt::nowNs() + 60 * kSecond) ? 1 : 0; });
    sem.post();
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(result.load(), 1);
    EXPECT_EQ(sem.value(), 0u);
}

}  // namespace
