// CondVar: notifyOne wakes exactly one, notifyAll wakes all, timed waits on nowNs(), on
// CLOCK_REALTIME and CLOCK_MONOTONIC timespecs, bad clocks and timespecs, and no stale waiter left
// behind by a time-out (Arachne's waitFor bug).
#include <ctime>
#include <deque>
#include <vector>

#include "test_util.h"

namespace {

using arbrt_test::eventually;
using arbrt_test::kMillisecond;
using arbrt_test::kSecond;
using arbrt_test::pinnedTo;

class CondVarTest : public arbrt_test::RuntimeTest<4> {};

// `t` plus `ns` nanoseconds, normalised.
timespec plusNs(timespec t, uint64_t ns) {
    const uint64_t total = uint64_t(t.tv_nsec) + ns;
    t.tv_sec += time_t(total / kSecond);
    t.tv_nsec = long(total % kSecond);
    return t;
}

// a >= b for timespecs.
bool notBefore(const timespec& a, const timespec& b) {
    return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec >= b.tv_nsec);
}

TEST_F(CondVarTest, NotifyOne_WakesExactlyOneOfSeveral) {
    constexpr int kWaiters = 8;
    arbrt::Mutex mutex;
    arbrt::CondVar cv;
    std::atomic<int> waiting{0}, woke{0};
    const arbrt::ThreadId driver = arbrt::createThreadWith(pinnedTo(1), [&] {
        std::vector<arbrt::ThreadId> waiters;
        for (int i = 0; i < kWaiters; ++i) {
            waiters.push_back(arbrt::createThreadWith(pinnedTo(1), [&] {
                mutex.lock();
                waiting.fetch_add(1);
                cv.wait(mutex);  // one wait, no predicate loop: we count wake-ups
                woke.fetch_add(1);
                mutex.unlock();
            }));
        }
        while (waiting.load() != kWaiters) arbrt::yield();  // one core: all are parked in wait()
        for (int expected = 1; expected <= 3; ++expected) {
            mutex.lock();
            cv.notifyOne();
            mutex.unlock();
            for (int i = 0; i < 3; ++i) arbrt::yield();  // whoever was woken runs now
            EXPECT_EQ(woke.load(), expected);
        }
        cv.notifyOne();  // without the mutex held: allowed
        for (int i = 0; i < 3; ++i) arbrt::yield();
        EXPECT_EQ(woke.load(), 4);
        cv.notifyAll();
        for (arbrt::ThreadId t : waiters) arbrt::join(t);
        EXPECT_EQ(woke.load(), kWaiters);
    });
    ASSERT_EQ(arbrt::join(driver), 0);
}

TEST_F(CondVarTest, NotifyOne_WithoutWaitersIsNotRemembered) {
    arbrt::Mutex mutex;
    arbrt::CondVar cv;
    std::atomic<int> waiting{0}, woke{0};
    const arbrt::ThreadId driver = arbrt::createThreadWith(pinnedTo(1), [&] {
        cv.notifyOne();
        cv.notifyAll();
        const arbrt::ThreadId waiter = arbrt::createThreadWith(pinnedTo(1), [&] {
            mutex.lock();
            waiting = 1;
            cv.wait(mutex);
            woke = 1;
            mutex.unlock();
        });
        while (waiting.load() != 1) arbrt::yield();
        arbrt::yield();
        EXPECT_EQ(woke.load(), 0);
        cv.notifyOne();
        arbrt::join(waiter);
        EXPECT_EQ(woke.load(), 1);
    });
    ASSERT_EQ(arbrt::join(driver), 0);
}

TEST_F(CondVarTest, NotifyAll_WakesAll) {
    constexpr int kWaiters = 300;
    arbrt::Mutex mutex;
    arbrt::CondVar cv;
    bool go = false;  // guarded by mutex
    int waiting = 0;  // guarded by mutex
    std::atomic<int> woke{0};
    std::vector<arbrt::ThreadId> threads;
    for (int i = 0; i < kWaiters; ++i) {
        threads.push_back(arbrt::createThread([&] {
            mutex.lock();
            ++waiting;
            while (!go) cv.wait(mutex);
            mutex.unlock();
            woke.fetch_add(1);
        }));
    }
    ASSERT_TRUE(eventually([&] {
        std::lock_guard<arbrt::Mutex> guard(mutex);
        return waiting == kWaiters;
    }));
    EXPECT_EQ(woke.load(), 0);
    mutex.lock();
    go = true;
    cv.notifyAll();
    mutex.unlock();
    for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(woke.load(), kWaiters);
}

TEST_F(CondVarTest, WaitFor_TimesOutAndReturnsFalseHoldingMutex) {
    arbrt::Mutex mutex;
    arbrt::CondVar cv;
    std::atomic<int> result{-1};
    std::atomic<bool> holding{false}, checked{false};
    std::atomic<uint64_t> before{0}, after{0};
    const arbrt::ThreadId t = arbrt::createThread([&] {
        mutex.lock();
        before = arbrt::nowNs();
        result = cv.waitFor(mutex, 2 * kMillisecond) ? 1 : 0;
        after = arbrt::nowNs();
        holding = true;
        while (!checked.load()) arbrt::yield();
        mutex.unlock();
    });
    ASSERT_TRUE(eventually([&] { return holding.load(); }));
    EXPECT_FALSE(mutex.tryLock()) << "waitFor returned without re-locking the mutex";
    checked = true;
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(result.load(), 0);
    EXPECT_GE(after.load(), before.load() + 2 * kMillisecond);
    // From the kernel thread as well.
    mutex.lock();
    const uint64_t start = arbrt::nowNs();
    EXPECT_FALSE(cv.waitFor(mutex, 2 * kMillisecond));
    EXPECT_GE(arbrt::nowNs(), start + 2 * kMillisecond);
    mutex.unlock();
}

TEST_F(CondVarTest, WaitUntil_NowNsDeadlinePassesReturnsFalse) {
    arbrt::Mutex mutex;
    arbrt::CondVar cv;
    const arbrt::ThreadId t = arbrt::createThread([&] {
        mutex.lock();
        const uint64_t deadline = arbrt::nowNs() + kMillisecond;
        EXPECT_FALSE(cv.waitUntil(mutex, deadline));
        EXPECT_GE(arbrt::nowNs(), deadline);
        EXPECT_FALSE(cv.waitUntil(mutex, arbrt::nowNs() - 1));  // already passed
        mutex.unlock();
    });
    EXPECT_EQ(arbrt::join(t), 0);
}

// A timed wait on `clock` that nobody notifies returns false, and not before its deadline.
void checkTimespecTimeout(clockid_t clock) {
    arbrt::Mutex mutex;
    arbrt::CondVar cv;
    timespec now;
    clock_gettime(clock, &now);
    const timespec deadline = plusNs(now, 2 * kMillisecond);
    mutex.lock();
    EXPECT_FALSE(cv.waitUntil(mutex, clock, deadline));
    timespec after;
    clock_gettime(clock, &after);
    EXPECT_TRUE(notBefore(after, deadline));
    mutex.unlock();
}

TEST_F(CondVarTest, WaitUntil_RealtimeTimespecTimesOut) {
    checkTimespecTimeout(CLOCK_REALTIME);
    const arbrt::ThreadId t = arbrt::createThread([] { checkTimespecTimeout(CLOCK_REALTIME); });
    EXPECT_EQ(arbrt::join(t), 0);
}

TEST_F(CondVarTest, WaitUntil_MonotonicTimespecTimesOut) {
    checkTimespecTimeout(CLOCK_MONOTONIC);
    const arbrt::ThreadId t = arbrt::createThread([] { checkTimespecTimeout(CLOCK_MONOTONIC); });
    EXPECT_EQ(arbrt::join(t), 0);
}

TEST_F(CondVarTest, WaitUntil_TimespecNotifiedReturnsTrue) {
    for (clockid_t clock : {CLOCK_REALTIME, CLOCK_MONOTONIC}) {
        arbrt::Mutex mutex;
        arbrt::CondVar cv;
        bool ready = false;  // guarded by mutex
        std::atomic<int> result{-1};
        const arbrt::ThreadId t = arbrt::createThread([&] {
            timespec now;
            clock_gettime(clock, &now);
            const timespec deadline = plusNs(now, 60 * kSecond);
            mutex.lock();
            bool woken = true;
            while (!ready && woken) woken = cv.waitUntil(mutex, clock, deadline);
            result = woken ? 1 : 0;
            mutex.unlock();
        });
        mutex.lock();
        ready = true;
        cv.notifyAll();
        mutex.unlock();
        EXPECT_EQ(arbrt::join(t), 0);
        EXPECT_EQ(result.load(), 1);
    }
}

TEST_F(CondVarTest, WaitUntil_BadTimespecOrClockReturnsFalse) {
    arbrt::Mutex mutex;
    arbrt::CondVar cv;
    std::atomic<int> falses{0};
    std::atomic<bool> done{false};
    const arbrt::ThreadId t = arbrt::createThread([&] {
        timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        const timespec later = plusNs(now, 60 * kSecond);
        const timespec negativeNs{later.tv_sec, -1};
        const timespec tooManyNs{later.tv_sec, long(kSecond)};
        mutex.lock();
        falses += !cv.waitUntil(mutex, CLOCK_MONOTONIC, negativeNs);
        falses += !cv.waitUntil(mutex, CLOCK_REALTIME, tooManyNs);
        falses += !cv.waitUntil(mutex, CLOCK_PROCESS_CPUTIME_ID, later);
        falses += !cv.waitUntil(mutex, CLOCK_THREAD_CPUTIME_ID, later);
        mutex.unlock();  // still ours after every call
        done = true;
    });
    const bool finished = eventually([&] { return done.load(); });
    if (!finished) cv.notifyAll();  // it waited on a bad deadline: release it
    EXPECT_TRUE(finished) << "a bad timespec or clock made waitUntil wait";
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(falses.load(), 4);
}

TEST_F(CondVarTest, WaitFor_TimedOutWaitersLeaveNoStaleEntry) {
    // Many short timed waits time out (some racing notifyOne calls from another core); then one
    // real waiter on a pinned core must be the one notifyOne wakes, at once.
    arbrt::Mutex mutex;
    arbrt::CondVar cv;
    std::atomic<int> timeouts{0}, notified{0}, woke{0}, waiting{0}, quietDone{0};
    std::atomic<bool> stopNotifier{false};
    const arbrt::ThreadId driver = arbrt::createThreadWith(pinnedTo(1), [&] {
        const arbrt::ThreadId notifier = arbrt::createThreadWith(pinnedTo(0), [&] {
            while (quietDone.load() != 8) arbrt::yield();  // the first 100 waits each time out
            while (!stopNotifier.load()) {
                cv.notifyOne();
                arbrt::yield();
            }
        });
        std::vector<arbrt::ThreadId> timers;
        for (int i = 0; i < 8; ++i) {
            timers.push_back(arbrt::createThreadWith(pinnedTo(2 + i % 2), [&, i] {
                for (int k = 0; k < 300; ++k) {
                    if (k == 100) quietDone.fetch_add(1);
                    mutex.lock();
                    if (cv.waitFor(mutex, uint64_t(1 + (k + i) % 20) * 1'000)) {
                        notified.fetch_add(1);
                    } else {
                        timeouts.fetch_add(1);
                    }
                    mutex.unlock();
                }
            }));
        }
        for (arbrt::ThreadId t : timers) arbrt::join(t);
        stopNotifier = true;
        arbrt::join(notifier);
        const arbrt::ThreadId real = arbrt::createThreadWith(pinnedTo(1), [&] {
            mutex.lock();
            waiting = 1;
            // Timed only so that a failing runtime ends the test instead of hanging it.
            if (cv.waitFor(mutex, 30 * kSecond)) woke = 1;
            mutex.unlock();
        });
        while (waiting.load() != 1) arbrt::yield();  // one core: it is parked in waitFor
        mutex.lock();
        cv.notifyOne();
        mutex.unlock();
        arbrt::yield();
        arbrt::yield();
        EXPECT_EQ(woke.load(), 1) << "notifyOne woke a stale (timed-out) waiter";
        arbrt::join(real);
    });
    ASSERT_EQ(arbrt::join(driver), 0);
    EXPECT_EQ(timeouts.load() + notified.load(), 8 * 300);
    EXPECT_GE(timeouts.load(), 8 * 100);
    EXPECT_EQ(woke.load(), 1);
}

TEST_F(CondVarTest, Wait_ProducerConsumerStress) {
    constexpr int kProducers = 4, kConsumers = 6, kItems = 5'000;
    arbrt::Mutex mutex;
    arbrt::CondVar nonEmpty, nonFull;
    std::deque<long> queue;  // guarded by mutex, at most 16 items
    int producersLeft = kProducers;
    std::atomic<long> consumedSum{0}, consumedCount{0};
    std::vector<arbrt::ThreadId> threads;
    for (int p = 0; p < kProducers; ++p) {
        threads.push_back(arbrt::createThread([&, p] {
            for (int i = 0; i < kItems; ++i) {
                mutex.lock();
                while (queue.size() >= 16) nonFull.wait(mutex);
                queue.push_back(long(p) * kItems + i);
                nonEmpty.notifyOne();
                mutex.unlock();
            }
            mutex.lock();
            if (--producersLeft == 0) nonEmpty.notifyAll();
            mutex.unlock();
        }));
    }
    for (int c = 0; c < kConsumers; ++c) {
        threads.push_back(arbrt::createThread([&, c] {
            for (;;) {
                mutex.lock();
                while (queue.empty() && producersLeft > 0) {
                    if (c % 2) {
                        nonEmpty.waitFor(mutex, 10'000);  // half of them use short time-outs
                    } else {
                        nonEmpty.wait(mutex);
                    }
                }
                if (queue.empty()) {
                    mutex.unlock();
                    return;
                }
                const long item = queue.front();
                queue.pop_front();
                nonFull.notifyOne();
                mutex.unlock();
                consumedSum.fetch_add(item);
                consumedCount.fetch_add(1);
            }
        }));
    }
    for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
    const long n = long(kProducers) * kItems;
    EXPECT_EQ(consumedCount.load(), n);
    EXPECT_EQ(consumedSum.load(), n * (n - 1) / 2);
}

}  // namespace
