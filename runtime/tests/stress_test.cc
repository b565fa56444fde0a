// Races under stress (hundreds of threads, many iterations, 4-8 cores, deterministic totals) and
// capacity: 10,000 live threads at once.
#include <vector>

#include "test_util.h"

namespace {

using arbrt_test::eventually;

class Stress : public arbrt_test::RuntimeTest<8> {};
class Capacity : public arbrt_test::RuntimeTest<4> {};

constexpr int kTenThousand = 10'000;

TEST_F(Capacity, Create_TenThousandLiveThreadsOnBarrier) {
    arbrt::Barrier barrier(kTenThousand + 1);  // the kernel thread is the last participant
    std::atomic<int> arrived{0}, passed{0};
    std::vector<arbrt::ThreadId> threads;
    threads.reserve(kTenThousand);
    for (int i = 0; i < kTenThousand; ++i) {
        const arbrt::ThreadId t = arbrt::createThread([&] {
            arrived.fetch_add(1);
            barrier.wait();
            passed.fetch_add(1);
        });
        ASSERT_TRUE(t) << "creating thread " << i;
        threads.push_back(t);
    }
    barrier.wait();  // returns once all 10,000 have arrived: all alive at the same time
    EXPECT_EQ(arrived.load(), kTenThousand);
    const arbrt::RuntimeStats s = arbrt::stats();
    EXPECT_GE(s.peakLiveThreads, uint64_t(kTenThousand));
    for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(passed.load(), kTenThousand);
    EXPECT_EQ(arbrt::stats().liveThreads, 0u);
}

TEST_F(Capacity, Create_TenThousandLiveThreadsOnCondVar) {
    arbrt::Mutex mutex;
    arbrt::CondVar cv;
    bool go = false;  // guarded by mutex
    int waiting = 0;  // guarded by mutex
    std::atomic<int> passed{0};
    std::vector<arbrt::ThreadId> threads;
    threads.reserve(kTenThousand);
    for (int i = 0; i < kTenThousand; ++i) {
        const arbrt::ThreadId t = arbrt::createThread([&] {
            mutex.lock();
            ++waiting;
            while (!go) cv.wait(mutex);
            mutex.unlock();
            passed.fetch_add(1);
        });
        ASSERT_TRUE(t) << "creating thread " << i;
        threads.push_back(t);
    }
    ASSERT_TRUE(eventually([&] {
        std::lock_guard<arbrt::Mutex> guard(mutex);
        return waiting == kTenThousand;
    }));
    EXPECT_EQ(arbrt::stats().liveThreads, uint64_t(kTenThousand));
    EXPECT_GE(arbrt::stats().peakLiveThreads, uint64_t(kTenThousand));
    EXPECT_EQ(passed.load(), 0);
    mutex.lock();
    go = true;
    cv.notifyAll();
    mutex.unlock();
    for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(passed.load(), kTenThousand);
}

TEST_F(Stress, Mixed_HundredsOfThreadsManyIterations) {
    constexpr int kThreads = 400, kIterations = 200, kSlots = 8;
    arbrt::Mutex mutex;
    arbrt::RwLock rw;
    arbrt::Semaphore slots(kSlots);
    long counter = 0;          // guarded by mutex
    long left = 0, right = 0;  // guarded by rw: always equal for readers
    std::atomic<int> inSlots{0}, violations{0};
    std::vector<arbrt::ThreadId> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.push_back(arbrt::createThread([&, t] {
            for (int i = 0; i < kIterations; ++i) {
                mutex.lock();
                ++counter;
                mutex.unlock();
                slots.wait();
                if (inSlots.fetch_add(1) >= kSlots) violations.fetch_add(1);
                if ((i + t) % 5 == 0) arbrt::yield();
                inSlots.fetch_sub(1);
                slots.post();
                if ((i + t) % 10 == 0) {
                    rw.lock();
                    ++left;
                    ++right;
                    rw.unlock();
                } else {
                    rw.lockShared();
                    if (left != right) violations.fetch_add(1);
                    rw.unlockShared();
                }
                arbrt::yield();
            }
        }));
    }
    for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(violations.load(), 0);
    EXPECT_EQ(counter, long(kThreads) * kIterations);
    EXPECT_EQ(left, long(kThreads) * kIterations / 10);
    EXPECT_EQ(slots.value(), unsigned(kSlots));
}

// A node of a binary spawn tree: spawns two children (anywhere), joins them, and returns the size
// of its subtree through join's result.
void* treeNode(void* arg) {
    const auto depth = reinterpret_cast<uintptr_t>(arg);
    if (depth == 0) return reinterpret_cast<void*>(uintptr_t{1});
    const arbrt::ThreadId left = arbrt::spawn({}, treeNode, reinterpret_cast<void*>(depth - 1));
    const arbrt::ThreadId right = arbrt::spawn({}, treeNode, reinterpret_cast<void*>(depth - 1));
    void* a = nullptr;
    void* b = nullptr;
    if (!left || !right || arbrt::join(left, &a) != 0 || arbrt::join(right, &b) != 0) {
        return nullptr;  // makes the total wrong
    }
    return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(a) + reinterpret_cast<uintptr_t>(b) +
                                   1);
}

TEST_F(Stress, CreateJoin_SpawnTreeCountsEveryNode) {
    constexpr uintptr_t kDepth = 12;
    const uint64_t createdBefore = arbrt::stats().threadsCreated;  // the fixture's
    void* result = nullptr;
    const arbrt::ThreadId root = arbrt::spawn({}, treeNode, reinterpret_cast<void*>(kDepth));
    ASSERT_EQ(arbrt::join(root, &result), 0);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(result), (uintptr_t{1} << (kDepth + 1)) - 1);
    EXPECT_EQ(arbrt::stats().threadsCreated - createdBefore, (uint64_t{1} << (kDepth + 1)) - 1);
}

TEST_F(Stress, Signal_ManyPingPongPairs) {
    constexpr int kPairs = 100, kRounds = 1'000;
    struct Pair {
        std::atomic<int> turn{0};
        arbrt::ThreadId ids[2];
        std::atomic<int> done{0};
    };
    std::vector<Pair> pairs(kPairs);
    arbrt::Semaphore gate;
    std::vector<arbrt::ThreadId> threads;
    for (int p = 0; p < kPairs; ++p) {
        for (int me = 0; me < 2; ++me) {
            Pair& pair = pairs[size_t(p)];
            pair.ids[me] = arbrt::createThread([&pair, &gate, me] {
                gate.wait();  // ids[] are complete once the gate opens
                for (int r = 0; r < kRounds; ++r) {
                    while (pair.turn.load() != me) arbrt::block();
                    pair.turn = 1 - me;
                    arbrt::signal(pair.ids[1 - me]);
                }
                pair.done.fetch_add(1);
            });
            threads.push_back(pair.ids[me]);
        }
    }
    for (int i = 0; i < 2 * kPairs; ++i) gate.post();
    for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
    for (const Pair& pair : pairs) {
        EXPECT_EQ(pair.done.load(), 2);
        EXPECT_EQ(pair.turn.load(), 0);
    }
}

TEST_F(Stress, Yield_ThousandThreadsYieldMany) {
    constexpr int kThreads = 1'000, kYields = 200;
    std::atomic<long> total{0};
    std::vector<arbrt::ThreadId> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.push_back(arbrt::createThread([&] {
            for (int i = 0; i < kYields; ++i) {
                arbrt::yield();
                total.fetch_add(1, std::memory_order_relaxed);
            }
        }));
    }
    for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(total.load(), long(kThreads) * kYields);
}

TEST_F(Stress, Detach_ChurnWhileOthersJoin) {
    // Detached and joinable threads created and ending concurrently from several creators.
    constexpr int kCreators = 16, kEach = 500;
    std::atomic<long> ran{0};
    std::vector<arbrt::ThreadId> creators;
    for (int c = 0; c < kCreators; ++c) {
        creators.push_back(arbrt::createThread([&, c] {
            arbrt::ThreadAttributes detached;
            detached.detached = true;
            for (int i = 0; i < kEach; ++i) {
                auto body = [&] { ran.fetch_add(1); };
                if ((i + c) % 2) {
                    arbrt::createThreadWith(detached, body);
                } else {
                    const arbrt::ThreadId t = arbrt::createThread(body);
                    if ((i + c) % 4 == 0) {
                        arbrt::join(t);
                    } else {
                        arbrt::detach(t);
                    }
                }
            }
        }));
    }
    for (arbrt::ThreadId t : creators) EXPECT_EQ(arbrt::join(t), 0);
    ASSERT_TRUE(eventually([] { return arbrt::stats().liveThreads == 0; }));
    EXPECT_EQ(ran.load(), long(kCreators) * kEach);
}

}  // namespace
