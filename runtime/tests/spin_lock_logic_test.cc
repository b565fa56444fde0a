// SpinLock (arbrt/embed/spin_lock.h): mutual exclusion through every phase of its slow path (spin,
// yield, futex sleep), and the lock-rank rule in builds that check invariants.
#include "arbrt/embed/spin_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace {

using arbrt::detail::LockRank;
using arbrt::detail::SpinLock;

// More kernel threads than any CI host has CPUs, each holding the lock across a few thousand
// instructions: holders get descheduled while holding it, so waiters reach the yield and sleep
// phases. A lost unlock wake-up would hang the test; a broken exclusion would lose increments
// (the counter is updated non-atomically under the lock).
TEST(SpinLock, Lock_ManyMoreThreadsThanCpusExcludeEachOtherAndAllFinish) {
    SpinLock lock(LockRank::runQueue);
    constexpr int kThreads = 16;
    constexpr int kRounds = 4000;
    uint64_t counter = 0;  // guarded by lock
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
        threads.emplace_back([&] {
            while (!go.load()) std::this_thread::yield();
            for (int r = 0; r < kRounds; ++r) {
                lock.lock();
                const uint64_t seen = counter;
                for (int spin = 0; spin < 200; ++spin) asm volatile("" ::: "memory");
                counter = seen + 1;
                lock.unlock();
            }
        });
    }
    go.store(true);
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(counter, uint64_t(kThreads) * kRounds);
}

TEST(SpinLock, TryLock_FailsWhileHeldAndSucceedsAfter) {
    SpinLock lock(LockRank::trace);
    ASSERT_TRUE(lock.tryLock());
    std::thread other([&] { EXPECT_FALSE(lock.tryLock()); });
    other.join();
    lock.unlock();
    std::thread again([&] {
        EXPECT_TRUE(lock.tryLock());
        lock.unlock();
    });
    again.join();
}

TEST(SpinLock, Rank_IsKeptInTheLockWordAndSurvivesUse) {
    SpinLock lock(LockRank::timerHeap);
    EXPECT_EQ(lock.rank(), LockRank::timerHeap);
    lock.lock();
    EXPECT_EQ(lock.rank(), LockRank::timerHeap);
    lock.unlock();
    EXPECT_EQ(lock.rank(), LockRank::timerHeap);
    EXPECT_EQ(sizeof(SpinLock), 4u);
}

TEST(SpinLock, Rank_IncreasingOrderAndAddressOrderedPairsAreAllowed) {
    SpinLock release(LockRank::coreRelease), queue(LockRank::runQueue);
    SpinLock buckets[2] = {SpinLock(LockRank::waitQueue), SpinLock(LockRank::waitQueue)};
    release.lock();
    buckets[0].lock();
    buckets[1].lock();  // same rank, higher address
    queue.lock();
    queue.unlock();
    buckets[0].unlock();  // released out of order: allowed
    buckets[1].unlock();
    release.unlock();
    SUCCEED() << "no rank violation reported";
}

TEST(SpinLock, Rank_SameRankInAnyOrderUnderItsSerialisingLock) {
    SpinLock release(LockRank::coreRelease);
    SpinLock timers[2] = {SpinLock(LockRank::timerHeap), SpinLock(LockRank::timerHeap)};
    release.lock();
    timers[1].lock();
    timers[0].lock();  // lower address, but the core release lock serialises such pairs
    timers[0].unlock();
    timers[1].unlock();
    release.unlock();
    SUCCEED() << "no rank violation reported";
}

// Lock-order violations, each in a function of its own for EXPECT_DEATH.
void takeReleaseUnderQueue() {
    SpinLock queue(LockRank::runQueue), release(LockRank::coreRelease);
    queue.lock();
    release.lock();
}

void takeBucketsOutOfOrder() {
    SpinLock buckets[2] = {SpinLock(LockRank::waitQueue), SpinLock(LockRank::waitQueue)};
    buckets[1].lock();
    buckets[0].lock();
}

TEST(SpinLock_DeathTest, Rank_LowerRankTakenWhileHigherHeldAborts) {
    if (!arbrt::detail::kCheckInvariants)
        GTEST_SKIP() << "lock ranks are checked only in builds "
                        "with ARBRUN_CHECK_INVARIANTS";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(takeReleaseUnderQueue(),
                 "taking the core release lock while holding the run queue lock");
}

TEST(SpinLock_DeathTest, Rank_SameRankOutOfAddressOrderAborts) {
    if (!arbrt::detail::kCheckInvariants)
        GTEST_SKIP() << "lock ranks are checked only in builds "
                        "with ARBRUN_CHECK_INVARIANTS";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(takeBucketsOutOfOrder(),
                 "taking the wait queue lock while holding the wait queue lock");
}

TEST(SpinLock_DeathTest, Unlock_ByAThreadThatDoesNotHoldItAborts) {
    if (!arbrt::detail::kCheckInvariants)
        GTEST_SKIP() << "lock ranks are checked only in builds "
                        "with ARBRUN_CHECK_INVARIANTS";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            SpinLock lock(LockRank::runQueue);
            lock.lock();
            std::thread([&] { lock.unlock(); }).join();
        },
        "released by a thread that does not hold it");
}

}  // namespace
