// RwLock: concurrent readers, exclusive writers, writer preference (a waiting writer holds back new
// readers) versus Preference::readers (recursive read locks work while a writer waits), try and
// timed variants, and a timed-out writer releasing the readers it held back.
#include <vector>

#include "test_util.h"

namespace {

using arbrt_test::eventually;
using arbrt_test::kMillisecond;
using arbrt_test::kSecond;
using arbrt_test::pinnedTo;

class RwLockTest : public arbrt_test::RuntimeTest<4> {};

TEST_F(RwLockTest, LockShared_ReadersHoldItTogether) {
    for (auto preference :
         {arbrt::RwLock::Preference::writers, arbrt::RwLock::Preference::readers}) {
        arbrt::RwLock lock(preference);
        std::atomic<int> inside{0}, together{0};
        std::vector<arbrt::ThreadId> readers;
        for (int core = 0; core < 4; ++core) {
            readers.push_back(arbrt::createThreadWith(pinnedTo(core), [&] {
                lock.lockShared();
                inside.fetch_add(1);
                // Exclusive readers would never get here all four at once (bounded: fails).
                if (eventually([&] { return inside.load() == 4; })) together.fetch_add(1);
                lock.unlockShared();
            }));
        }
        for (arbrt::ThreadId t : readers) EXPECT_EQ(arbrt::join(t), 0);
        EXPECT_EQ(together.load(), 4);
    }
}

TEST_F(RwLockTest, Lock_WriterExcludesEveryoneUnderStress) {
    constexpr int kThreads = 100, kIterations = 1'000;
    arbrt::RwLock lock;
    long a = 0, b = 0;  // written together under the write lock: readers must never see a != b
    std::atomic<int> readersInside{0}, writersInside{0}, violations{0};
    std::atomic<long> writes{0};
    std::vector<arbrt::ThreadId> threads;
    for (int t = 0; t < kThreads; ++t) {
        const bool writer = t % 4 == 0;
        threads.push_back(arbrt::createThread([&, writer, t] {
            for (int i = 0; i < kIterations; ++i) {
                if (writer) {
                    lock.lock();
                    if (writersInside.fetch_add(1) != 0 || readersInside.load() != 0) {
                        violations.fetch_add(1);
                    }
                    ++a;
                    if ((i + t) % 16 == 0) arbrt::yield();
                    ++b;
                    writes.fetch_add(1);
                    writersInside.fetch_sub(1);
                    lock.unlock();
                } else {
                    lock.lockShared();
                    readersInside.fetch_add(1);
                    if (writersInside.load() != 0 || a != b) violations.fetch_add(1);
                    if ((i + t) % 16 == 0) arbrt::yield();
                    readersInside.fetch_sub(1);
                    lock.unlockShared();
                }
            }
        }));
    }
    for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(violations.load(), 0);
    EXPECT_EQ(a, writes.load());
    EXPECT_EQ(b, writes.load());
}

TEST_F(RwLockTest, TryLock_FailsWhileHeld) {
    arbrt::RwLock lock;
    EXPECT_TRUE(lock.tryLockShared());
    EXPECT_FALSE(lock.tryLock());
    EXPECT_TRUE(lock.tryLockShared());  // no writer waiting: readers share
    lock.unlockShared();
    lock.unlockShared();
    EXPECT_TRUE(lock.tryLock());
    EXPECT_FALSE(lock.tryLock());
    EXPECT_FALSE(lock.tryLockShared());
    std::atomic<int> fromUser{-1};
    const arbrt::ThreadId t = arbrt::createThread(
        [&] { fromUser = (lock.tryLockShared() ? 1 : 0) + (lock.tryLock() ? 2 : 0); });
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(fromUser.load(), 0);
    lock.unlock();
    EXPECT_TRUE(lock.tryLockShared());
    lock.unlockShared();
}

TEST_F(RwLockTest, LockUntil_TimesOutWhileReadersHold) {
    arbrt::RwLock lock;
    lock.lockShared();  // the kernel thread holds it for reading
    std::atomic<uint64_t> deadline{0}, after{0};
    std::atomic<int> result{-1};
    const arbrt::ThreadId t = arbrt::createThread([&] {
        deadline = arbrt::nowNs() + 2 * kMillisecond;
        result = lock.lockUntil(deadline) ? 1 : 0;
        after = arbrt::nowNs();
    });
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(result.load(), 0);
    EXPECT_GE(after.load(), deadline.load());
    lock.unlockShared();
    EXPECT_TRUE(lock.tryLock());  // the timed-out writer left nothing behind
    lock.unlock();
}

TEST_F(RwLockTest, LockSharedUntil_TimesOutWhileWriterHolds) {
    arbrt::RwLock lock;
    lock.lock();
    const arbrt::ThreadId t = arbrt::createThread([&] {
        const uint64_t deadline = arbrt::nowNs() + 2 * kMillisecond;
        EXPECT_FALSE(lock.lockSharedUntil(deadline));
        EXPECT_GE(arbrt::nowNs(), deadline);
        EXPECT_FALSE(lock.lockUntil(arbrt::nowNs() + kMillisecond));
    });
    EXPECT_EQ(arbrt::join(t), 0);
    const uint64_t deadline = arbrt::nowNs() + kMillisecond;  // kernel thread
    EXPECT_FALSE(lock.lockSharedUntil(deadline));
    EXPECT_GE(arbrt::nowNs(), deadline);
    lock.unlock();
    EXPECT_TRUE(lock.lockSharedUntil(arbrt::nowNs() + kSecond));
    lock.unlockShared();
}

TEST_F(RwLockTest, LockUntil_SucceedsWhenReleased) {
    arbrt::RwLock lock;
    lock.lockShared();
    std::atomic<int> writer{-1}, reader{-1};
    std::atomic<bool> waiting{false};
    const arbrt::ThreadId w = arbrt::createThread([&] {
        waiting = true;
        writer = lock.lockUntil(arbrt::nowNs() + 60 * kSecond) ? 1 : 0;
        if (writer.load() == 1) lock.unlock();
    });
    ASSERT_TRUE(eventually([&] { return waiting.load(); }));
    lock.unlockShared();
    EXPECT_EQ(arbrt::join(w), 0);
    EXPECT_EQ(writer.load(), 1);
    lock.lock();
    const arbrt::ThreadId r = arbrt::createThread([&] {
        reader = lock.lockSharedUntil(arbrt::nowNs() + 60 * kSecond) ? 1 : 0;
        if (reader.load() == 1) lock.unlockShared();
    });
    lock.unlock();
    EXPECT_EQ(arbrt::join(r), 0);
    EXPECT_EQ(reader.load(), 1);
    EXPECT_TRUE(lock.tryLock());
    lock.unlock();
}

// One core (pinned threads), so each step's outcome is known after a yield: a reader R1 holds the
// lock, a writer W waits for it. Returns what a new reader could do meanwhile.
struct WaitingWriterOutcome {
    bool tryLockSharedWhileWriterWaits = false;
    bool timedLockSharedWhileWriterWaits = false;
    bool recursiveReadByHolder = false;
    int writerRank = 0;  // order in which W and a late reader R2 got the lock (1 = first)
    int lateReaderRank = 0;
};

WaitingWriterOutcome runWaitingWriter(arbrt::RwLock::Preference preference) {
    WaitingWriterOutcome out;
    arbrt::RwLock lock(preference);
    arbrt::Semaphore releaseR1;
    std::atomic<int> r1Held{0}, wQueued{0}, r2Queued{0}, rank{0};
    std::atomic<bool> recursed{false};
    const arbrt::ThreadId r1 = arbrt::createThreadWith(pinnedTo(1), [&] {
        lock.lockShared();
        r1Held = 1;
        releaseR1.wait();
        // Recursive read while W waits: fine with Preference::readers, a deadlock with writers
        // (then this times out).
        if (lock.lockSharedUntil(arbrt::nowNs() + 20 * kMillisecond)) {
            recursed = true;
            lock.unlockShared();
        }
        lock.unlockShared();
    });
    while (r1Held.load() != 1) arbrt::yield();
    const arbrt::ThreadId w = arbrt::createThreadWith(pinnedTo(1), [&] {
        wQueued = 1;
        lock.lock();
        out.writerRank = rank.fetch_add(1) + 1;
        lock.unlock();
    });
    while (wQueued.load() != 1) arbrt::yield();  // W has parked in lock()
    out.tryLockSharedWhileWriterWaits = lock.tryLockShared();
    if (out.tryLockSharedWhileWriterWaits) lock.unlockShared();
    if (lock.lockSharedUntil(arbrt::nowNs() + kMillisecond)) {
        out.timedLockSharedWhileWriterWaits = true;
        lock.unlockShared();
    }
    const arbrt::ThreadId r2 = arbrt::createThreadWith(pinnedTo(1), [&] {
        r2Queued = 1;
        lock.lockShared();
        out.lateReaderRank = rank.fetch_add(1) + 1;
        lock.unlockShared();
    });
    while (r2Queued.load() != 1) arbrt::yield();
    releaseR1.post();
    arbrt::join(r1);
    arbrt::join(w);
    arbrt::join(r2);
    out.recursiveReadByHolder = recursed.load();
    return out;
}

TEST_F(RwLockTest, LockShared_WaitingWriterHoldsBackNewReaders) {
    WaitingWriterOutcome out;
    const arbrt::ThreadId driver = arbrt::createThreadWith(
        pinnedTo(1), [&] { out = runWaitingWriter(arbrt::RwLock::Preference::writers); });
    ASSERT_EQ(arbrt::join(driver), 0);
    EXPECT_FALSE(out.tryLockSharedWhileWriterWaits);
    EXPECT_FALSE(out.timedLockSharedWhileWriterWaits);
    EXPECT_FALSE(out.recursiveReadByHolder);
    EXPECT_EQ(out.writerRank, 1);  // the writer first, then the reader that came after it
    EXPECT_EQ(out.lateReaderRank, 2);
}

TEST_F(RwLockTest, LockShared_PreferReadersAllowsRecursiveReadWhileWriterWaits) {
    WaitingWriterOutcome out;
    const arbrt::ThreadId driver = arbrt::createThreadWith(
        pinnedTo(1), [&] { out = runWaitingWriter(arbrt::RwLock::Preference::readers); });
    ASSERT_EQ(arbrt::join(driver), 0);
    EXPECT_TRUE(out.tryLockSharedWhileWriterWaits);
    EXPECT_TRUE(out.timedLockSharedWhileWriterWaits);
    EXPECT_TRUE(out.recursiveReadByHolder);
    EXPECT_EQ(out.lateReaderRank, 1);  // readers are let in ahead of the waiting writer
    EXPECT_EQ(out.writerRank, 2);
}

TEST_F(RwLockTest, LockUntil_TimedOutWriterLetsHeldBackReadersIn) {
    // R1 reads; W's timed write waits; R2 queues behind W. When W times out, R2 must get in while
    // R1 still holds the lock.
    arbrt::RwLock lock;
    std::atomic<int> wResult{-1}, r2Got{0}, stage{0};
    arbrt::Semaphore releaseR1;
    const arbrt::ThreadId driver = arbrt::createThreadWith(pinnedTo(1), [&] {
        const arbrt::ThreadId r1 = arbrt::createThreadWith(pinnedTo(1), [&] {
            lock.lockShared();
            stage = 1;
            releaseR1.wait();
            lock.unlockShared();
        });
        while (stage.load() != 1) arbrt::yield();
        const arbrt::ThreadId w = arbrt::createThreadWith(pinnedTo(1), [&] {
            stage = 2;
            wResult = lock.lockUntil(arbrt::nowNs() + 2 * kMillisecond) ? 1 : 0;
            if (wResult.load() == 1) lock.unlock();
        });
        while (stage.load() != 2) arbrt::yield();
        const arbrt::ThreadId r2 = arbrt::createThreadWith(pinnedTo(1), [&] {
            stage = 3;
            if (lock.lockSharedUntil(arbrt::nowNs() + 30 * kSecond)) {
                r2Got = 1;
                lock.unlockShared();
            }
        });
        while (stage.load() != 3) arbrt::yield();
        arbrt::join(w);  // times out: R1 still reads
        arbrt::join(r2);
        releaseR1.post();
        arbrt::join(r1);
    });
    ASSERT_EQ(arbrt::join(driver), 0);
    EXPECT_EQ(wResult.load(), 0);
    EXPECT_EQ(r2Got.load(), 1);
    EXPECT_TRUE(lock.tryLock());
    lock.unlock();
}

}  // namespace
