// The parking lot (user-level futex table): park/unpark between user threads and kernel threads,
// validation under the bucket lock, bitsets, time-outs that leave no waiter behind, and requeue.
#include <arbrt/arbrt.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "sync/wait_queue.h"
#include "test_util.h"

namespace {

using arbrt_test::eventually;

class ParkingLot : public arbrt_test::RuntimeTest<2> {};

TEST_F(ParkingLot, Park_InvalidWhenValidateFails) {
    int word = 1;
    EXPECT_EQ(arbrt::park(
                  &word, [&] { return word == 0; }, arbrt::kNoDeadline),
              arbrt::ParkResult::invalid);
    EXPECT_EQ(arbrt::parkedCount(&word), 0u);
}

TEST_F(ParkingLot, Unpark_WakesUserThreadsOldestFirst) {
    std::atomic<int> word{0};
    std::vector<int> order;  // appended under `mu`
    arbrt::Mutex mu;
    std::vector<arbrt::ThreadId> threads;
    for (int i = 0; i < 4; ++i) {
        // Each parks only after the previous one is parked: a known FIFO order.
        ASSERT_TRUE(eventually([&] { return arbrt::parkedCount(&word) == size_t(i); }));
        threads.push_back(arbrt::createThread([&, i] {
            const auto r = arbrt::park(
                &word, [&] { return word.load() == 0; }, arbrt::kNoDeadline);
            EXPECT_EQ(r, arbrt::ParkResult::woken);
            mu.lock();
            order.push_back(i);
            mu.unlock();
        }));
    }
    ASSERT_TRUE(eventually([&] { return arbrt::parkedCount(&word) == 4; }));
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(arbrt::unpark(&word, 1), 1u);
        ASSERT_TRUE(eventually([&] {
            mu.lock();
            size_t n = order.size();
            mu.unlock();
            return n == size_t(i + 1);
        }));
    }
    for (auto t : threads) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(arbrt::unpark(&word, 1), 0u);  // nobody left
}

TEST_F(ParkingLot, Park_KernelThreadWokenByUserThread) {
    std::atomic<int> word{0};
    arbrt::ThreadId waker = arbrt::createThread([&] {
        while (arbrt::parkedCount(&word) == 0) arbrt::yield();
        word = 1;
        EXPECT_EQ(arbrt::unpark(&word, 10), 1u);
    });
    const auto r = arbrt::park(
        &word, [&] { return word.load() == 0; }, arbrt::kNoDeadline);
    EXPECT_EQ(r, arbrt::ParkResult::woken);
    EXPECT_EQ(arbrt::join(waker), 0);
}

TEST_F(ParkingLot, Park_TimesOutAndLeavesNoWaiter) {
    int word = 0;
    for (int i = 0; i < 50; ++i) {
        const uint64_t deadline = arbrt::nowNs() + 200'000;
        arbrt::ThreadId t = arbrt::createThread([&] {
            EXPECT_EQ(arbrt::park(
                          &word, [] { return true; }, deadline),
                      arbrt::ParkResult::timedOut);
            EXPECT_GE(arbrt::nowNs(), deadline);
        });
        EXPECT_EQ(arbrt::join(t), 0);
    }
    EXPECT_EQ(arbrt::parkedCount(&word), 0u);
    EXPECT_EQ(arbrt::unpark(&word, 1), 0u);
}

TEST_F(ParkingLot, Unpark_BitsetSelectsWaiters) {
    int word = 0;
    std::atomic<int> woken{0};
    std::vector<arbrt::ThreadId> threads;
    for (uint32_t bits : {1u, 2u, 1u, 4u}) {
        threads.push_back(arbrt::createThread([&, bits] {
            arbrt::park(
                &word, [] { return true; }, arbrt::kNoDeadline, bits);
            woken.fetch_add(1);
        }));
    }
    ASSERT_TRUE(eventually([&] { return arbrt::parkedCount(&word) == 4; }));
    EXPECT_EQ(arbrt::unpark(&word, 10, 1u), 2u);  // the two with bit 0
    EXPECT_EQ(arbrt::unpark(&word, 10, 8u), 0u);  // nobody has bit 3
    EXPECT_EQ(arbrt::unpark(&word, 10, 6u), 2u);  // bits 1 and 2
    for (auto t : threads) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(woken.load(), 4);
}

TEST_F(ParkingLot, Requeue_WakesSomeMovesTheRest) {
    int from = 0, to = 0;
    std::vector<arbrt::ThreadId> threads;
    for (int i = 0; i < 5; ++i) {
        threads.push_back(arbrt::createThread([&] {
            arbrt::park(
                &from, [] { return true; }, arbrt::kNoDeadline);
        }));
    }
    ASSERT_TRUE(eventually([&] { return arbrt::parkedCount(&from) == 5; }));
    EXPECT_EQ(arbrt::requeue(&from, &to, 1, 10, [] { return false; }), -1);  // validate failed
    EXPECT_EQ(arbrt::parkedCount(&from), 5u);
    EXPECT_EQ(arbrt::requeue(&from, &to, 1, 3, [] { return true; }), 4);
    EXPECT_EQ(arbrt::parkedCount(&from), 1u);
    EXPECT_EQ(arbrt::parkedCount(&to), 3u);
    EXPECT_EQ(arbrt::unpark(&to, 10), 3u);
    EXPECT_EQ(arbrt::unpark(&from, 10), 1u);
    for (auto t : threads) EXPECT_EQ(arbrt::join(t), 0);
}

// More waiters to wake than one batch under the bucket lock (32): those past the batch are woken
// after unlocking, so the requeue must leave them where they are and move only the ones after them.
TEST_F(ParkingLot, Requeue_WakeCountBeyondOneBatchMovesOnlyTheRest) {
    constexpr int kWaiters = 45, kWake = 40, kMove = 5;
    int from = 0, to = 0;
    std::atomic<int> woken{0};
    std::vector<arbrt::ThreadId> threads;
    for (int i = 0; i < kWaiters; ++i) {
        threads.push_back(arbrt::createThread([&, i] {
            arbrt::park(
                &from, [] { return true; }, arbrt::kNoDeadline);
            woken.fetch_add(1);
        }));
        // One at a time, so the queue order is the creation order.
        ASSERT_TRUE(eventually([&] { return arbrt::parkedCount(&from) == size_t(i + 1); }));
    }
    EXPECT_EQ(arbrt::requeue(&from, &to, kWake, 100, [] { return true; }), kWake + kMove);
    EXPECT_EQ(arbrt::parkedCount(&from), 0u);
    EXPECT_EQ(arbrt::parkedCount(&to), size_t(kMove));
    ASSERT_TRUE(eventually([&] { return woken.load() == kWake; }));
    EXPECT_EQ(arbrt::unpark(&to, 100), size_t(kMove));
    for (auto t : threads) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(woken.load(), kWaiters);
}

TEST_F(ParkingLot, RequeuedWaiter_TimesOutFromItsNewAddress) {
    int from = 0, to = 0;
    const uint64_t deadline = arbrt::nowNs() + 50'000'000;
    arbrt::ThreadId t = arbrt::createThread([&] {
        EXPECT_EQ(arbrt::park(
                      &from, [] { return true; }, deadline),
                  arbrt::ParkResult::timedOut);
    });
    ASSERT_TRUE(eventually([&] { return arbrt::parkedCount(&from) == 1; }));
    EXPECT_EQ(arbrt::requeue(&from, &to, 0, 1, [] { return true; }), 1);
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(arbrt::parkedCount(&to), 0u);
    EXPECT_EQ(arbrt::parkedCount(&from), 0u);
}

}  // namespace

namespace {

TEST_F(ParkingLot, ParkInterruptible_InterruptedUnlinksAndReturns) {
    int word = 0;
    std::atomic<bool> stop{false};
    std::atomic<int> result{-1};
    arbrt::ThreadId t = arbrt::createThread([&] {
        result = int(arbrt::parkInterruptible(
            &word, [] { return true; }, arbrt::kNoDeadline, [&] { return stop.load(); }));
    });
    ASSERT_TRUE(eventually([&] { return arbrt::parkedCount(&word) == 1; }));
    stop = true;
    arbrt::signal(t);  // whoever makes interrupted() true wakes the thread
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(result.load(), int(arbrt::ParkResult::interrupted));
    EXPECT_EQ(arbrt::parkedCount(&word), 0u);
    EXPECT_EQ(arbrt::unpark(&word, 1), 0u);
}

TEST_F(ParkingLot, ParkInterruptible_AlreadyInterruptedDoesNotBlock) {
    int word = 0;
    std::atomic<int> result{-1};
    arbrt::ThreadId t = arbrt::createThread([&] {
        result = int(arbrt::parkInterruptible(
            &word, [] { return true; }, arbrt::kNoDeadline, [] { return true; }));
    });
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(result.load(), int(arbrt::ParkResult::interrupted));
    EXPECT_EQ(arbrt::parkedCount(&word), 0u);
}

// The interruption is seen once and is gone when the park sorts out its result (another thread
// took the process-directed signal): without a deadline that passed, that is an interruption, not
// a time-out (an untimed pthread_cond_wait must never say ETIMEDOUT).
TEST_F(ParkingLot, ParkInterruptible_InterruptionGoneBeforeTheResultIsNotATimeOut) {
    for (const bool timed : {false, true}) {
        int word = 0;
        std::atomic<int> result{-1};
        const uint64_t deadline =
            timed ? arbrt::nowNs() + 3'600 * arbrt_test::kSecond : arbrt::kNoDeadline;
        arbrt::ThreadId t = arbrt::createThread([&] {
            int looks = 0;
            result = int(arbrt::parkInterruptible(
                &word, [] { return true; }, deadline, [&] { return ++looks == 1; }));
        });
        EXPECT_EQ(arbrt::join(t), 0);
        EXPECT_EQ(result.load(), int(arbrt::ParkResult::interrupted)) << "timed " << timed;
        EXPECT_EQ(arbrt::parkedCount(&word), 0u);
    }
}

TEST_F(ParkingLot, ParkInterruptible_SpuriousSignalKeepsWaiting) {
    std::atomic<int> word{0};
    std::atomic<int> result{-1};
    arbrt::ThreadId t = arbrt::createThread([&] {
        result = int(arbrt::parkInterruptible(
            &word, [&] { return word.load() == 0; }, arbrt::kNoDeadline, [] { return false; }));
    });
    ASSERT_TRUE(eventually([&] { return arbrt::parkedCount(&word) == 1; }));
    arbrt::signal(t);  // not an interruption: it parks again
    ASSERT_TRUE(eventually([&] { return arbrt::parkedCount(&word) == 1; }));
    EXPECT_EQ(result.load(), -1);
    word = 1;
    EXPECT_EQ(arbrt::unpark(&word, 1), 1u);
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(result.load(), int(arbrt::ParkResult::woken));
}

TEST_F(ParkingLot, ParkInterruptible_TimesOut) {
    int word = 0;
    std::atomic<int> result{-1};
    const uint64_t deadline = arbrt::nowNs() + 200'000;
    arbrt::ThreadId t = arbrt::createThread([&] {
        result = int(arbrt::parkInterruptible(
            &word, [] { return true; }, deadline, [] { return false; }));
    });
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(result.load(), int(arbrt::ParkResult::timedOut));
    EXPECT_EQ(arbrt::parkedCount(&word), 0u);
}

TEST_F(ParkingLot, JoinInterruptible_ReturnsEintrAndStaysJoinable) {
    std::atomic<bool> release{false}, stop{false};
    static std::atomic<bool>* gStop;
    gStop = &stop;
    arbrt::ThreadId target = arbrt::createThread([&] {
        while (!release.load()) arbrt::yield();
    });
    std::atomic<int> first{-1};
    arbrt::ThreadId joiner = arbrt::createThread(
        [&] { first = arbrt::joinInterruptible(target, nullptr, [] { return gStop->load(); }); });
    stop = true;
    arbrt::signal(joiner);
    EXPECT_EQ(arbrt::join(joiner), 0);
    EXPECT_EQ(first.load(), EINTR);
    release = true;
    EXPECT_EQ(arbrt::join(target), 0);  // still joinable after the interrupted join
}

}  // namespace
