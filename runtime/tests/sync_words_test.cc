// The shared synchronisation algorithms (arbrt/sync_words.h) through what only the preload's
// pthread layer uses of them: WaitHooks (interrupted waits that go on or end), the robust mutex's
// owner-died word, the semaphore's maximum, a barrier destroyed while a round is incomplete; and
// races between a waiter about to park and the thread that releases it.
#include <arbrt/arbrt.h>
#include <gtest/gtest.h>

#include <atomic>

#include "test_util.h"

namespace {

namespace words = arbrt::words;
using arbrt::kNoDeadline;
using arbrt_test::eventually;
using arbrt_test::kMicrosecond;
using arbrt_test::kSecond;
using arbrt_test::pinnedTo;
using arbrt_test::relax;
using words::WaitStatus;

class SyncWords : public arbrt_test::RuntimeTest<2> {};

// Hooks the test drives: pending() while `raised`; act() counts, lowers the flag and returns
// `endWait` (true: the wait ends as interrupted).
class FlagHooks final : public words::WaitHooks {
  public:
    explicit FlagHooks(bool endWait) : endWait_(endWait) {}
    bool pending() const override { return raised.load(); }
    bool act() const override {
        acts.fetch_add(1);
        raised.store(false);
        return endWait_;
    }
    mutable std::atomic<bool> raised{false};
    mutable std::atomic<int> acts{0};

  private:
    bool endWait_;
};

constexpr int kQuit = 1 << 30;  // a round number that tells the racing threads to stop

// Waits until `go` announces `round` (true) or kQuit (false).
bool waitTurn(const std::atomic<int>& go, int round) {
    for (;;) {
        const int g = go.load();
        if (g == round) return true;
        if (g == kQuit) return false;
        relax();
    }
}

// Raises `hooks` for the user thread `t` parked on `address` and wakes it, as the preload's signal
// delivery does; returns once act() ran.
bool interrupt(FlagHooks& hooks, arbrt::ThreadId t, const void* address) {
    if (!eventually([&] { return arbrt::parkedCount(address) == 1; })) return false;
    const int before = hooks.acts.load();
    hooks.raised.store(true);
    arbrt::signal(t);
    return eventually([&] { return hooks.acts.load() == before + 1; });
}

TEST_F(SyncWords, MutexLock_InterruptedWaiterActsAndWaitsOn) {
    std::atomic<uint32_t> word{words::kLocked};  // held by the test
    FlagHooks hooks(false);
    std::atomic<int> status{-1};
    const arbrt::ThreadId t =
        arbrt::createThread([&] { status = int(words::mutexLock(word, kNoDeadline, &hooks)); });
    EXPECT_TRUE(interrupt(hooks, t, &word));
    // act() said "wait on": it parks again, still without the lock.
    EXPECT_TRUE(eventually([&] { return arbrt::parkedCount(&word) == 1; }));
    EXPECT_EQ(status.load(), -1);
    words::mutexUnlock(word);
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(status.load(), int(WaitStatus::ok));
    EXPECT_EQ(hooks.acts.load(), 1);
}

TEST_F(SyncWords, SemWait_InterruptedWaitEndsAndWithdrawsItsCount) {
    std::atomic<uint64_t> data{0};
    FlagHooks hooks(true);
    std::atomic<int> status{-1};
    const arbrt::ThreadId t =
        arbrt::createThread([&] { status = int(words::semWait(data, kNoDeadline, &hooks)); });
    EXPECT_TRUE(interrupt(hooks, t, &data));
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(status.load(), int(WaitStatus::interrupted));
    EXPECT_EQ(data.load(), 0u) << "the interrupted waiter left its count (or took a unit)";
    EXPECT_EQ(words::semPost(data), WaitStatus::ok);
    EXPECT_EQ(arbrt::parkedCount(&data), 0u);
    EXPECT_TRUE(words::semTryWait(data));
}

TEST_F(SyncWords, SemPost_AtMaximumOverflowsAndChangesNothing) {
    std::atomic<uint64_t> data{words::kSemValueMax - 1};
    EXPECT_EQ(words::semPost(data), WaitStatus::ok);
    EXPECT_EQ(words::semValue(data), words::kSemValueMax);
    EXPECT_EQ(words::semPost(data), WaitStatus::overflow);
    EXPECT_EQ(words::semValue(data), words::kSemValueMax);
}

TEST_F(SyncWords, BarrierDestroy_BusyWhileARoundIsIncomplete) {
    std::atomic<uint64_t> tickets{0};
    std::atomic<uint32_t> completed{0}, inside{0};
    const words::BarrierWords b{tickets, 2, completed, inside};
    std::atomic<int> serial{-1};
    const arbrt::ThreadId t =
        arbrt::createThread([&] { serial = words::barrierWait(b, nullptr) ? 1 : 0; });
    EXPECT_TRUE(eventually([&] { return arbrt::parkedCount(&completed) == 1; }));
    EXPECT_EQ(words::barrierDestroy(b), WaitStatus::busy);
    EXPECT_TRUE(words::barrierWait(b, nullptr));  // the round's last arrival
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(serial.load(), 0);
    EXPECT_EQ(words::barrierDestroy(b), WaitStatus::ok);
    EXPECT_EQ(inside.load(), 0u);
}

// Two threads on two cores race for a word a dead owner left: in every round exactly one gets
// ownerDied, the other gets the lock plainly after it.
TEST_F(SyncWords, MutexLock_RacingLockersTakeADeadOwnersWordOnce) {
    constexpr int kRounds = 300;
    std::atomic<uint32_t> word{words::kFree};
    std::atomic<int> go{-1}, done{0}, ownerDied{0}, plain{0}, other{0};
    auto locker = [&] {
        for (int round = 0; round < kRounds && waitTurn(go, round); ++round) {
            switch (words::mutexLock(word, kNoDeadline, nullptr)) {
                case WaitStatus::ownerDied:
                    ownerDied.fetch_add(1);
                    break;
                case WaitStatus::ok:
                    plain.fetch_add(1);
                    break;
                default:
                    other.fetch_add(1);
            }
            words::mutexUnlock(word);
            done.fetch_add(1);
        }
    };
    const arbrt::ThreadId a = arbrt::createThreadWith(pinnedTo(0), locker);
    const arbrt::ThreadId b = arbrt::createThreadWith(pinnedTo(1), locker);
    for (int round = 0; round < kRounds; ++round) {
        word.store(words::kOwnerDied);
        go.store(round);
        if (!eventually([&] { return done.load() == 2 * (round + 1); })) {
            ADD_FAILURE() << "round " << round << " hangs";
            go.store(kQuit);
            words::mutexUnlock(word);
            break;
        }
    }
    EXPECT_EQ(arbrt::join(a), 0);
    EXPECT_EQ(arbrt::join(b), 0);
    EXPECT_EQ(ownerDied.load(), kRounds);
    EXPECT_EQ(plain.load(), kRounds);
    EXPECT_EQ(other.load(), 0);
}

// A notify racing a waiter between condBeginWait and its park is never lost: every round's
// waiter returns woken, long before its deadline.
TEST_F(SyncWords, CondWait_NotifyRacingThePark_IsNeverLost) {
    constexpr int kRounds = 500;
    std::atomic<uint32_t> sequence{0}, waiters{0};
    const words::CondWords c{sequence, waiters};
    std::atomic<int> ready{-1}, notified{-1}, woken{0};
    const arbrt::ThreadId waiter = arbrt::createThreadWith(pinnedTo(0), [&] {
        for (int round = 0; round < kRounds; ++round) {
            const uint32_t observed = words::condBeginWait(c);
            ready.store(round);
            if (words::condWait(c, observed, arbrt::nowNs() + 10 * kSecond, nullptr) !=
                WaitStatus::ok) {
                ready.store(kQuit);  // lost: the round count shows it
                return;
            }
            waitTurn(notified, round);  // no stale notify for the next round
            woken.fetch_add(1);
        }
    });
    const arbrt::ThreadId notifier = arbrt::createThreadWith(pinnedTo(1), [&] {
        for (int round = 0; round < kRounds && waitTurn(ready, round); ++round) {
            words::condNotify(c, 1);
            notified.store(round);
        }
    });
    EXPECT_EQ(arbrt::join(notifier), 0);
    EXPECT_EQ(arbrt::join(waiter), 0);
    EXPECT_EQ(woken.load(), kRounds);
    EXPECT_EQ(waiters.load(), 0u);
}

// Writer preference: a reader holds the lock; in each round a writer's timed lock races a second
// reader that has seen the writer's waiting bit and parks behind it. When the writer times out,
// that reader must get in (the first reader still holds the lock), in every round.
TEST_F(SyncWords, RwWriteLock_TimedOutWriterLetsTheReaderItHeldBackIn) {
    constexpr int kRounds = 200;
    std::atomic<uint32_t> state{0};
    char readersQueue = 0, writersQueue = 0;
    const words::RwWords rw{state, &readersQueue, &writersQueue, true};
    ASSERT_EQ(words::rwTryRead(rw), WaitStatus::ok);  // the first reader, for the whole test
    std::atomic<int> go{-1}, writerDone{-1}, readerDone{-1}, writerGotIt{0}, readerIn{0};
    const arbrt::ThreadId writer = arbrt::createThreadWith(pinnedTo(0), [&] {
        for (int round = 0; round < kRounds && waitTurn(go, round); ++round) {
            const uint64_t wait = (20 + round % 40) * kMicrosecond;
            if (words::rwWriteLock(rw, arbrt::nowNs() + wait, nullptr) == WaitStatus::ok) {
                writerGotIt.fetch_add(1);  // cannot happen: the first reader holds it
                words::rwWriteUnlock(rw);
            }
            writerDone.store(round);
        }
    });
    const arbrt::ThreadId reader = arbrt::createThreadWith(pinnedTo(1), [&] {
        for (int round = 0; round < kRounds && waitTurn(go, round); ++round) {
            // Behind the writer's bit, unless the writer already gave up.
            while (!(state.load() & words::kWritersWaiting) && writerDone.load() != round) relax();
            // Held back for good, it would time out: the count shows it.
            if (words::rwReadLock(rw, arbrt::nowNs() + 10 * kSecond, nullptr) == WaitStatus::ok) {
                readerIn.fetch_add(1);
                words::rwReadUnlock(rw);
            }
            readerDone.store(round);
        }
    });
    for (int round = 0; round < kRounds; ++round) {
        go.store(round);
        if (!eventually([&] { return writerDone.load() == round && readerDone.load() == round; }) ||
            readerIn.load() != round + 1) {
            break;
        }
    }
    go.store(kQuit);
    EXPECT_EQ(arbrt::join(writer), 0);
    EXPECT_EQ(arbrt::join(reader), 0);
    EXPECT_EQ(readerIn.load(), kRounds);
    EXPECT_EQ(writerGotIt.load(), 0);
    EXPECT_EQ(state.load() & (words::kWriteLocked | words::kWritersWaiting), 0u);
    words::rwReadUnlock(rw);
}

}  // namespace
