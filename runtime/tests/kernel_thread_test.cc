// The primitives used from a kernel thread that is not a user thread (the test's main thread),
// interacting with user threads: it blocks on a futex where a user thread would park.
#include <vector>

#include "test_util.h"

namespace {

using arbrt_test::eventually;

class KernelThread : public arbrt_test::RuntimeTest<2> {};

TEST_F(KernelThread, CondVar_WaitsForUserThreadSignal) {
    arbrt::Mutex mutex;
    arbrt::CondVar cv;
    bool ready = false;  // guarded by mutex
    const arbrt::ThreadId t = arbrt::createThread([&] {
        mutex.lock();
        ready = true;
        cv.notifyOne();
        mutex.unlock();
    });
    mutex.lock();
    while (!ready) cv.wait(mutex);
    mutex.unlock();
    EXPECT_EQ(arbrt::join(t), 0);
}

TEST_F(KernelThread, CondVar_PingPongWithUserThread) {
    constexpr int kRounds = 2'000;
    arbrt::Mutex mutex;
    arbrt::CondVar cv;
    int turn = 0;  // guarded by mutex; 0: kernel thread's turn, 1: user thread's
    int userRounds = 0;
    const arbrt::ThreadId t = arbrt::createThread([&] {
        for (int r = 0; r < kRounds; ++r) {
            mutex.lock();
            while (turn != 1) cv.wait(mutex);
            turn = 0;
            ++userRounds;
            cv.notifyAll();
            mutex.unlock();
        }
    });
    for (int r = 0; r < kRounds; ++r) {
        mutex.lock();
        while (turn != 0) cv.wait(mutex);
        turn = 1;
        cv.notifyAll();
        mutex.unlock();
    }
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(userRounds, kRounds);
}

TEST_F(KernelThread, CondVar_NotifyAllWakesKernelAndUserWaiters) {
    arbrt::Mutex mutex;
    arbrt::CondVar cv;
    bool go = false;  // guarded by mutex
    int waiting = 0;  // guarded by mutex
    std::atomic<int> woke{0};
    std::vector<arbrt::ThreadId> users;
    for (int i = 0; i < 20; ++i) {
        users.push_back(arbrt::createThread([&] {
            mutex.lock();
            ++waiting;
            while (!go) cv.wait(mutex);
            mutex.unlock();
            woke.fetch_add(1);
        }));
    }
    const arbrt::ThreadId notifier = arbrt::createThread([&] {
        // Waits until the 20 user threads and the kernel thread all wait, then wakes them all.
        for (;;) {
            mutex.lock();
            const bool all = waiting == 21;
            if (all) {
                go = true;
                cv.notifyAll();
            }
            mutex.unlock();
            if (all) return;
            arbrt::yield();
        }
    });
    mutex.lock();
    ++waiting;
    while (!go) cv.wait(mutex);
    mutex.unlock();
    for (arbrt::ThreadId t : users) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(arbrt::join(notifier), 0);
    EXPECT_EQ(woke.load(), 20);
}

TEST_F(KernelThread, Semaphore_HandsOffBothWays) {
    constexpr int kRounds = 2'000;
    arbrt::Semaphore toUser, toKernel;
    const arbrt::ThreadId t = arbrt::createThread([&] {
        for (int r = 0; r < kRounds; ++r) {
            toUser.wait();
            toKernel.post();
        }
    });
    for (int r = 0; r < kRounds; ++r) {
        toUser.post();
        toKernel.wait();
    }
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(toUser.value(), 0u);
    EXPECT_EQ(toKernel.value(), 0u);
}

TEST_F(KernelThread, Barrier_KernelThreadParticipates) {
    constexpr int kUsers = 7, kCycles = 200;
    arbrt::Barrier barrier(kUsers + 1);
    std::atomic<int> trues{0}, arrivals{0}, early{0};
    std::vector<arbrt::ThreadId> users;
    auto participant = [&](int cycles) {
        for (int c = 0; c < cycles; ++c) {
            arrivals.fetch_add(1);
            if (barrier.wait()) trues.fetch_add(1);
            if (arrivals.load() < (c + 1) * (kUsers + 1)) early.fetch_add(1);
        }
    };
    for (int i = 0; i < kUsers; ++i) users.push_back(arbrt::createThread(participant, kCycles));
    participant(kCycles);
    for (arbrt::ThreadId t : users) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(trues.load(), kCycles);
    EXPECT_EQ(early.load(), 0);
}

TEST_F(KernelThread, Mutex_BlocksUntilUserThreadUnlocks) {
    arbrt::Mutex mutex;
    arbrt::Semaphore release;
    std::atomic<bool> held{false}, unlocked{false};
    const arbrt::ThreadId t = arbrt::createThread([&] {
        mutex.lock();
        held = true;
        release.wait();
        unlocked = true;
        mutex.unlock();
    });
    ASSERT_TRUE(eventually([&] { return held.load(); }));
    release.post();
    mutex.lock();  // blocks (futex) until the user thread unlocks
    EXPECT_TRUE(unlocked.load());
    mutex.unlock();
    EXPECT_EQ(arbrt::join(t), 0);
}

TEST_F(KernelThread, RwLock_WriterAndUserReaders) {
    arbrt::RwLock lock;
    long value = 0;  // guarded by lock
    std::atomic<int> torn{0};
    std::atomic<bool> stop{false};
    std::vector<arbrt::ThreadId> readers;
    for (int i = 0; i < 8; ++i) {
        readers.push_back(arbrt::createThread([&] {
            while (!stop.load()) {
                lock.lockShared();
                if (value % 2 != 0) torn.fetch_add(1);  // the writer leaves it even
                lock.unlockShared();
                arbrt::yield();
            }
        }));
    }
    for (int i = 0; i < 5'000; ++i) {
        lock.lock();
        ++value;
        ++value;
        lock.unlock();
    }
    stop = true;
    for (arbrt::ThreadId t : readers) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(torn.load(), 0);
    EXPECT_EQ(value, 10'000);
}

TEST_F(KernelThread, Join_WaitsForBlockedUserThread) {
    arbrt::Semaphore release;
    const arbrt::ThreadId t = arbrt::createThread([&] { release.wait(); });
    const arbrt::ThreadId poster = arbrt::createThread([&] { release.post(); });
    EXPECT_EQ(arbrt::join(t), 0);  // the kernel thread waits on a futex until t exits
    EXPECT_EQ(arbrt::join(poster), 0);
}

}  // namespace
