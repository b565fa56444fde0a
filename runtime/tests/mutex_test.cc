// Mutex: mutual exclusion under stress, tryLock, lockUntil (time-out while held, success when
// released, no stale waiter left by a time-out), std::lock_guard compatibility.
#include <mutex>
#include <vector>

#include "test_util.h"

namespace {

using arbrt_test::eventually;
using arbrt_test::kMillisecond;
using arbrt_test::kSecond;
using arbrt_test::pinnedTo;

class MutexTest : public arbrt_test::RuntimeTest<4> {};

TEST_F(MutexTest, Lock_MutualExclusionUnderStress) {
    constexpr int kThreads = 200, kIncrements = 2'000;
    arbrt::Mutex mutex;
    long counter = 0;  // plain int: only the mutex protects it
    std::atomic<int> inside{0}, overlaps{0};
    std::vector<arbrt::ThreadId> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.push_back(arbrt::createThread([&, t] {
            for (int i = 0; i < kIncrements; ++i) {
                mutex.lock();
                if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
                ++counter;
                if ((i + t) % 64 == 0) arbrt::yield();  // holder switches out: waiters queue
                inside.fetch_sub(1);
                mutex.unlock();
            }
        }));
    }
    for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(counter, long(kThreads) * kIncrements);
    EXPECT_EQ(overlaps.load(), 0);
}

TEST_F(MutexTest, TryLock_FailsWhileHeld) {
    arbrt::Mutex mutex;
    EXPECT_TRUE(mutex.tryLock());
    EXPECT_FALSE(mutex.tryLock());  // not recursive
    std::atomic<int> fromUser{-1};
    const arbrt::ThreadId t = arbrt::createThread([&] { fromUser = mutex.tryLock() ? 1 : 0; });
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(fromUser.load(), 0);
    mutex.unlock();
    const arbrt::ThreadId u = arbrt::createThread([&] {
        fromUser = mutex.tryLock() ? 1 : 0;
        if (fromUser.load()) mutex.unlock();
    });
    EXPECT_EQ(arbrt::join(u), 0);
    EXPECT_EQ(fromUser.load(), 1);
}

TEST_F(MutexTest, LockGuard_WorksWithStdLocks) {
    arbrt::Mutex mutex;
    {
        std::lock_guard<arbrt::Mutex> guard(mutex);
        EXPECT_FALSE(mutex.tryLock());
    }
    std::unique_lock<arbrt::Mutex> lock(mutex, std::try_to_lock);
    EXPECT_TRUE(lock.owns_lock());
}

// Holds `mutex` on a user thread until `release` is posted; `held` turns true once it has it.
arbrt::ThreadId holdUntil(arbrt::Mutex& mutex, arbrt::Semaphore& release, std::atomic<bool>& held) {
    return arbrt::createThread([&] {
        mutex.lock();
        held = true;
        release.wait();
        mutex.unlock();
    });
}

TEST_F(MutexTest, LockUntil_TimesOutWhileHeld) {
    arbrt::Mutex mutex;
    arbrt::Semaphore release;
    std::atomic<bool> held{false};
    const arbrt::ThreadId holder = holdUntil(mutex, release, held);
    ASSERT_TRUE(eventually([&] { return held.load(); }));
    const uint64_t deadline = arbrt::nowNs() + 2 * kMillisecond;  // kernel thread
    EXPECT_FALSE(mutex.lockUntil(deadline));
    EXPECT_GE(arbrt::nowNs(), deadline);
    std::atomic<int> userResult{-1};
    std::atomic<uint64_t> userDeadline{0}, userAfter{0};
    const arbrt::ThreadId waiter = arbrt::createThread([&] {
        userDeadline = arbrt::nowNs() + 2 * kMillisecond;
        userResult = mutex.lockUntil(userDeadline) ? 1 : 0;
        userAfter = arbrt::nowNs();
    });
    EXPECT_EQ(arbrt::join(waiter), 0);
    EXPECT_EQ(userResult.load(), 0);
    EXPECT_GE(userAfter.load(), userDeadline.load());
    EXPECT_FALSE(mutex.lockUntil(arbrt::nowNs() - 1));  // deadline already passed
    release.post();
    EXPECT_EQ(arbrt::join(holder), 0);
    EXPECT_TRUE(mutex.lockUntil(arbrt::nowNs() - 1));  // free: no waiting needed
    mutex.unlock();
}

TEST_F(MutexTest, LockUntil_SucceedsWhenReleased) {
    arbrt::Mutex mutex;
    arbrt::Semaphore release;
    std::atomic<bool> held{false};
    const arbrt::ThreadId holder = holdUntil(mutex, release, held);
    ASSERT_TRUE(eventually([&] { return held.load(); }));
    std::atomic<int> result{-1};
    std::atomic<bool> waiting{false};
    const arbrt::ThreadId waiter = arbrt::createThread([&] {
        waiting = true;
        result = mutex.lockUntil(arbrt::nowNs() + 60 * kSecond) ? 1 : 0;
        if (result.load() == 1) mutex.unlock();
    });
    ASSERT_TRUE(eventually([&] { return waiting.load(); }));
    release.post();
    EXPECT_EQ(arbrt::join(holder), 0);
    EXPECT_EQ(arbrt::join(waiter), 0);
    EXPECT_EQ(result.load(), 1);
    // And from the kernel thread.
    std::atomic<bool> heldAgain{false};
    const arbrt::ThreadId holder2 = holdUntil(mutex, release, heldAgain);
    ASSERT_TRUE(eventually([&] { return heldAgain.load(); }));
    release.post();
    EXPECT_TRUE(mutex.lockUntil(arbrt::nowNs() + 60 * kSecond));
    mutex.unlock();
    EXPECT_EQ(arbrt::join(holder2), 0);
}

TEST_F(MutexTest, LockUntil_TimedOutWaitersLeaveNoStaleEntry) {
    // Many time-outs on a held mutex, then the holder hands over to a real waiter on one core: if a
    // timed-out waiter were still queued, unlock() would wake it instead and the real waiter would
    // not run when the driver yields.
    arbrt::Mutex mutex;
    std::atomic<int> timeouts{0}, acquired{0};
    const arbrt::ThreadId driver = arbrt::createThreadWith(pinnedTo(1), [&] {
        mutex.lock();
        std::vector<arbrt::ThreadId> timers;
        for (int i = 0; i < 8; ++i) {  // on other cores, racing their own time-outs
            timers.push_back(arbrt::createThreadWith(pinnedTo(2 + i % 2), [&, i] {
                for (int k = 0; k < 200; ++k) {
                    if (!mutex.lockUntil(arbrt::nowNs() + uint64_t(1 + (k + i) % 20) * 1'000)) {
                        timeouts.fetch_add(1);
                    } else {
                        mutex.unlock();  // cannot happen: the driver holds it throughout
                    }
                }
            }));
        }
        for (arbrt::ThreadId t : timers) arbrt::join(t);
        const arbrt::ThreadId real = arbrt::createThreadWith(pinnedTo(1), [&] {
            // Timed only so that a failing runtime ends the test instead of hanging it.
            if (mutex.lockUntil(arbrt::nowNs() + 30 * kSecond)) {
                acquired.fetch_add(1);
                mutex.unlock();
            }
        });
        arbrt::yield();  // the real waiter runs, queues and parks
        mutex.unlock();  // hands over to the head of the queue
        arbrt::yield();  // which must be the real waiter: it runs now
        EXPECT_EQ(acquired.load(), 1);
        arbrt::join(real);
    });
    ASSERT_EQ(arbrt::join(driver), 0);
    EXPECT_EQ(timeouts.load(), 8 * 200);
    EXPECT_EQ(acquired.load(), 1);
}

TEST_F(MutexTest, Lock_KernelAndUserThreadsContend) {
    constexpr int kThreads = 8, kIncrements = 20'000;
    arbrt::Mutex mutex;
    long counter = 0;
    std::vector<arbrt::ThreadId> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.push_back(arbrt::createThread([&] {
            for (int i = 0; i < kIncrements; ++i) {
                mutex.lock();
                ++counter;
                if (i % 128 == 0) arbrt::yield();
                mutex.unlock();
            }
        }));
    }
    for (int i = 0; i < kIncrements; ++i) {
        mutex.lock();
        ++counter;
        mutex.unlock();
    }
    for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(counter, long(kThreads + 1) * kIncrements);
}

}  // namespace
