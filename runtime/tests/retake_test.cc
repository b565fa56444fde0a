// Retake (src/retake.h), on the runtime alone with syscall user dispatch off: a user thread whose
// carrier sleeps in the kernel in a call nobody caught (a raw read on a pipe, a raw futex wait,
// issued from the preempt workload library) gives up the only core within the retake bound, so
// the thread queued behind it runs; the call then completes with the right result. A thread that
// computes is preempted as before, never retaken; one asleep in a call that cannot be re-issued
// is left alone.
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>

#include "arbrt/io.h"
#include "preempt/workload.h"
#include "test_util.h"

namespace {

class Retake : public ::testing::Test {
  protected:
    void SetUp() override {
        arbrt::RuntimeOptions options;
        options.numCores = 1;
        options.preemptSignal = SIGURG;  // unused by this program
        options.installPreemptHandler = true;
        options.retakeAfterNs = 100'000;
        const auto err = arbrt::start(options);
        ASSERT_FALSE(err.has_value()) << err->message;
    }
    void TearDown() override { EXPECT_TRUE(arbrt::stop()) << "user threads still alive"; }

    // Joins `t`, allowing 10 s; on failure runs `unblock` from this kernel thread so the test
    // ends instead of hanging, and reports it.
    template <typename Unblock>
    void joinOrUnblock(arbrt::ThreadId t, Unblock unblock) {
        const int err = arbrt::joinUntil(t, arbrt::nowNs() + 10 * arbrt_test::kSecond);
        if (err == 0) return;
        ADD_FAILURE() << "the blocked thread kept its core: the waiting thread never ran";
        unblock();
        EXPECT_EQ(arbrt::join(t), 0);
    }
};

TEST_F(Retake, RawPipeRead_LendsTheOnlyCoreToTheWriter) {
    int fds[2];
    ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
    const arbrt::RuntimeStats before = arbrt::stats();
    long got = 0;
    char byte = 0;
    // One core: the reader runs and sleeps in the kernel; only giving up the core lets the writer,
    // created once the reader runs, run.
    std::atomic<bool> reading{false};
    const arbrt::ThreadId reader = arbrt::createThread([&] {
        reading = true;
        got = preempt_workload::rawSyscall3(SYS_read, fds[0], long(&byte), 1);
    });
    ASSERT_TRUE(arbrt_test::eventually([&] { return reading.load(); }));
    const arbrt::ThreadId writer = arbrt::createThread(
        [&] { ASSERT_EQ(preempt_workload::rawSyscall3(SYS_write, fds[1], long("x"), 1), 1); });
    joinOrUnblock(writer, [&] { ASSERT_EQ(write(fds[1], "y", 1), 1); });
    joinOrUnblock(reader, [&] { ASSERT_EQ(write(fds[1], "z", 1), 1); });
    EXPECT_EQ(got, 1);
    EXPECT_EQ(byte, 'x');
    // A retake, which lends the core. On a loaded host the monitor's first look can come while
    // the carrier still spends CPU on its way into the call; it then preempts instead, and the
    // kernel's restart of the read after the handler gives the same result.
    const arbrt::RuntimeStats after = arbrt::stats();
    EXPECT_GE(after.retakes + after.preemptions, before.retakes + before.preemptions + 1);
    if (after.retakes > before.retakes) {
        EXPECT_GE(after.coresLent, before.coresLent + 1);
    }
    close(fds[0]);
    close(fds[1]);
}

TEST_F(Retake, RawFutexWait_IsWokenByTheThreadQueuedBehindIt) {
    // Many rounds: the wake may come before or after the retake, and both must work.
    for (int round = 0; round < 20; ++round) {
        std::atomic<int> word{0};
        long waited = 1;
        const arbrt::ThreadId waiter = arbrt::createThread([&] {
            while (word.load() == 0) {
                waited =
                    preempt_workload::rawSyscall3(SYS_futex, long(&word), FUTEX_WAIT_PRIVATE, 0);
            }
        });
        const arbrt::ThreadId waker = arbrt::createThread([&] {
            word.store(1);
            preempt_workload::rawSyscall3(SYS_futex, long(&word), FUTEX_WAKE_PRIVATE, 1);
        });
        joinOrUnblock(waker, [&] {
            word.store(1);
            syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1);
        });
        joinOrUnblock(waiter, [&] {
            word.store(1);
            syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1);
        });
        EXPECT_TRUE(waited == 0 || waited == -EAGAIN) << waited;  // woken, or never slept
    }
}

// A token ring of raw futex waits on the only core: each member wakes the next and waits, so every
// hand-off is a retake, whose runner lends the core itself (to an idle spare, or back to the
// owner waiting for it) while the monitor, finding the stamp overdue, may be lending it too. Many
// hand-offs, so the two lenders really race; the ring's order and count show that no member ran
// twice or was lost.
TEST_F(Retake, RawFutexRing_EveryHandOffLendsTheCoreOnward) {
    constexpr int kRing = 4;
    constexpr uint32_t kRounds = 150;
    constexpr uint32_t kAbandoned = 1'000'000;  // a slot value past every round: the hang guard's
    struct alignas(64) Slot {
        std::atomic<uint32_t> v{0};
    };
    Slot slots[kRing];
    std::atomic<uint32_t> passes{0};
    std::atomic<int> misordered{0};
    const uint64_t retakesBefore = arbrt::stats().retakes;
    arbrt::ThreadId members[kRing];
    for (int me = 0; me < kRing; ++me) {
        members[me] = arbrt::createThread([&, me] {
            for (uint32_t r = 0; r < kRounds; ++r) {
                uint32_t seen;
                while ((seen = slots[me].v.load(std::memory_order_acquire)) == r) {
                    preempt_workload::rawSyscall3(SYS_futex, long(&slots[me].v), FUTEX_WAIT_PRIVATE,
                                                  long(r));
                }
                if (seen >= kAbandoned) return;
                if (passes.load(std::memory_order_relaxed) != r * kRing + uint32_t(me)) {
                    misordered.fetch_add(1);
                }
                passes.fetch_add(1, std::memory_order_relaxed);
                Slot& next = slots[(me + 1) % kRing];
                next.v.fetch_add(1, std::memory_order_release);
                preempt_workload::rawSyscall3(SYS_futex, long(&next.v), FUTEX_WAKE_PRIVATE, 1);
            }
        });
    }
    slots[0].v.fetch_add(1, std::memory_order_release);
    syscall(SYS_futex, &slots[0].v, FUTEX_WAKE_PRIVATE, 1);
    const uint64_t deadline = arbrt::nowNs() + 30 * arbrt_test::kSecond;
    bool abandoned = false;
    for (arbrt::ThreadId t : members) {
        if (!abandoned && arbrt::joinUntil(t, deadline) == 0) continue;
        if (!abandoned) {
            ADD_FAILURE() << "the ring stopped after " << passes.load() << " passes";
            abandoned = true;
            for (Slot& slot : slots) {
                slot.v.store(kAbandoned, std::memory_order_release);
                syscall(SYS_futex, &slot.v, FUTEX_WAKE_PRIVATE, INT_MAX);
            }
        }
        EXPECT_EQ(arbrt::join(t), 0);
    }
    EXPECT_EQ(passes.load(), kRing * kRounds);
    EXPECT_EQ(misordered.load(), 0);
    EXPECT_EQ(slots[0].v.load(), kRounds + 1);
    EXPECT_GE(arbrt::stats().retakes, retakesBefore + kRing);
}

TEST_F(Retake, BracketedCall_IsLeftToTheLendingPath) {
    // The monitor may look at a core just before its runner stamps a blocking call of its own
    // (an interposed wrapper) and find the carrier asleep in a retakeable read: the retake must
    // then leave the call alone, or the wrapper's own bracket never ends. Many short rounds, with
    // the runner computing up to the call, so the look and the stamp really race.
    int fds[2];
    ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
    for (int round = 0; round < 300; ++round) {
        char byte = 0;
        long got = 0;
        const arbrt::ThreadId reader = arbrt::createThread([&] {
            preempt_workload::spinFor(uint64_t(round % 7) * 30'000);
            arbrt::BlockingCall blocking;
            got = preempt_workload::rawSyscall3(SYS_read, fds[0], long(&byte), 1);
        });
        const arbrt::ThreadId writer = arbrt::createThread(
            [&] { ASSERT_EQ(preempt_workload::rawSyscall3(SYS_write, fds[1], long("w"), 1), 1); });
        joinOrUnblock(writer, [&] { ASSERT_EQ(write(fds[1], "y", 1), 1); });
        joinOrUnblock(reader, [&] { ASSERT_EQ(write(fds[1], "z", 1), 1); });
        ASSERT_EQ(got, 1) << "round " << round;
    }
    close(fds[0]);
    close(fds[1]);
}

TEST_F(Retake, ComputingThread_IsPreemptedNotRetaken) {
    std::atomic<bool> stop{false};
    const uint64_t retakes = arbrt::stats().retakes;
    const uint64_t preemptions = arbrt::stats().preemptions;
    const arbrt::ThreadId spinner =
        arbrt::createThread([&] { preempt_workload::spinUntil(&stop); });
    const arbrt::ThreadId setter = arbrt::createThread([&] { stop.store(true); });
    EXPECT_EQ(arbrt::join(setter), 0);
    EXPECT_EQ(arbrt::join(spinner), 0);
    EXPECT_EQ(arbrt::stats().retakes, retakes);
    EXPECT_GE(arbrt::stats().preemptions, preemptions + 1);
}

TEST_F(Retake, SleepThatCannotBeReissued_IsNeitherRetakenNorInterrupted) {
    // A raw nanosleep (a restart would stretch it) for three time slices, with a thread waiting
    // behind it: the monitor sees the carrier asleep in the kernel and sends no signal, which
    // would only have cut the sleep short with EINTR.
    const timespec sleep{0, 30'000'000};
    long slept = 1;
    const uint64_t retakes = arbrt::stats().retakes;
    const arbrt::ThreadId sleeper = arbrt::createThread(
        [&] { slept = preempt_workload::rawSyscall3(SYS_nanosleep, long(&sleep), 0, 0); });
    bool ran = false;
    const arbrt::ThreadId waiting = arbrt::createThread([&] { ran = true; });
    EXPECT_EQ(arbrt::join(sleeper), 0);
    EXPECT_EQ(arbrt::join(waiting), 0);
    EXPECT_EQ(slept, 0);
    EXPECT_TRUE(ran);
    EXPECT_EQ(arbrt::stats().retakes, retakes);
}

TEST(RetakeOptions, Start_RejectsOutOfRangeBound) {
    arbrt::RuntimeOptions options;
    options.numCores = 1;
    for (uint64_t bad : {uint64_t{1}, uint64_t{19'999}, uint64_t{1'000'000'001}}) {
        options.retakeAfterNs = bad;
        const auto err = arbrt::start(options);
        ASSERT_TRUE(err.has_value()) << bad;
        EXPECT_EQ(err->code, arbrt::Errc::invalidArgument);
    }
}

}  // namespace
