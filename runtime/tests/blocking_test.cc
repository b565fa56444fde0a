// Layer A: a user thread blocked in the kernel inside enterBlockingCall/exitBlockingCall does not
// stop its core. Every test runs on ONE core, where without lending the blocked carrier would
// deadlock the program (the thread that unblocks it could never run).
#include <arbrt/io.h>
#include <arbrt/sync.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <vector>

#include "test_util.h"

namespace {

using arbrt_test::kMillisecond;

class BlockingOneCore : public arbrt_test::RuntimeTest<1> {};

// A pipe closed on scope exit.
struct Pipe {
    int fds[2] = {-1, -1};
    Pipe() { EXPECT_EQ(pipe2(fds, O_CLOEXEC), 0); }
    ~Pipe() {
        for (int fd : fds) {
            if (fd >= 0) close(fd);
        }
    }
    int readEnd() const { return fds[0]; }
    int writeEnd() const { return fds[1]; }
};

// Reads one byte in a blocking call bracketed for layer A.
char blockingReadByte(int fd) {
    char c = 0;
    arbrt::BlockingCall call;
    EXPECT_EQ(read(fd, &c, 1), 1);
    return c;
}

TEST_F(BlockingOneCore, BlockedReader_CoreLentToWriter) {
    Pipe p;
    const uint64_t lentBefore = arbrt::stats().coresLent;
    std::atomic<char> got{0};
    auto reader = arbrt::createThread([&] { got = blockingReadByte(p.readEnd()); });
    // The writer is queued behind the reader on the only core: it runs only if the core is lent.
    auto writer = arbrt::createThread([&] { ASSERT_EQ(write(p.writeEnd(), "x", 1), 1); });
    EXPECT_EQ(arbrt::join(reader), 0);
    EXPECT_EQ(arbrt::join(writer), 0);
    EXPECT_EQ(got.load(), 'x');
    EXPECT_GE(arbrt::stats().coresLent, lentBefore + 1);
}

TEST_F(BlockingOneCore, PipePingPong_BothDirections) {
    Pipe there, back;
    constexpr int kRounds = 200;
    auto ping = arbrt::createThread([&] {
        for (int i = 0; i < kRounds; ++i) {
            char c = char('a' + i % 26);
            ASSERT_EQ(write(there.writeEnd(), &c, 1), 1);
            ASSERT_EQ(blockingReadByte(back.readEnd()), c);
        }
    });
    auto pong = arbrt::createThread([&] {
        for (int i = 0; i < kRounds; ++i) {
            char c = blockingReadByte(there.readEnd());
            ASSERT_EQ(write(back.writeEnd(), &c, 1), 1);
        }
    });
    EXPECT_EQ(arbrt::join(ping), 0);
    EXPECT_EQ(arbrt::join(pong), 0);
}

TEST_F(BlockingOneCore, ManyBlockedReaders_EachServedInTurn) {
    constexpr int kReaders = 24;  // more than one spare carrier is needed at once
    std::vector<Pipe> pipes(kReaders);
    std::atomic<int> done{0};
    std::vector<arbrt::ThreadId> readers;
    for (int i = 0; i < kReaders; ++i) {
        readers.push_back(arbrt::createThread([&, i] {
            EXPECT_EQ(blockingReadByte(pipes[size_t(i)].readEnd()), 'r');
            done.fetch_add(1);
        }));
    }
    auto writer = arbrt::createThread([&] {
        for (auto& p : pipes) ASSERT_EQ(write(p.writeEnd(), "r", 1), 1);
    });
    for (auto r : readers) EXPECT_EQ(arbrt::join(r), 0);
    EXPECT_EQ(arbrt::join(writer), 0);
    EXPECT_EQ(done.load(), kReaders);
}

TEST_F(BlockingOneCore, SleeperOnBlockedCore_TimerStillFires) {
    Pipe p;
    // The writer sleeps first: its timer lives on the core whose runner is blocked in read(), so
    // the monitor must fire it and lend the core.
    auto reader = arbrt::createThread([&] { EXPECT_EQ(blockingReadByte(p.readEnd()), 's'); });
    auto writer = arbrt::createThread([&] {
        arbrt::sleepFor(kMillisecond);
        ASSERT_EQ(write(p.writeEnd(), "s", 1), 1);
    });
    EXPECT_EQ(arbrt::join(reader), 0);
    EXPECT_EQ(arbrt::join(writer), 0);
}

TEST_F(BlockingOneCore, ShortCallWithNothingWaiting_NotLent) {
    const uint64_t lentBefore = arbrt::stats().coresLent;
    auto t = arbrt::createThread([] {
        for (int i = 0; i < 1000; ++i) {
            arbrt::BlockingCall call;
            EXPECT_EQ(getppid() > 0, true);
        }
    });
    EXPECT_EQ(arbrt::join(t), 0);
    // Nothing else was runnable on the core, so there was never a reason to lend it.
    EXPECT_EQ(arbrt::stats().coresLent, lentBefore);
}

// A wait inside a bracket (a lookup's guard, a lock, in code the bracket covers): the thread
// parks with its bracket open and other threads run on the core and make their own blocking calls
// meanwhile. The bracket is closed for the park and opened again at the resume, so the waiter's
// own close neither finds another thread's stamp nor spins for a lend that never comes (it did:
// the program hung, fio under load in one run of fifty).
TEST_F(BlockingOneCore, ParkInsideBracket_OtherBracketsMeanwhileDoNotStrandIt) {
    arbrt::Mutex m;
    std::atomic<bool> waiterInside{false};
    std::atomic<int> holderCalls{0};
    auto holder = arbrt::createThread([&] {
        m.lock();
        while (!waiterInside.load()) arbrt::yield();  // one core: the waiter runs until it parks
        for (int i = 0; i < 100; ++i) {
            arbrt::BlockingCall call;
            if (getppid() > 0) holderCalls.fetch_add(1);
        }
        m.unlock();
    });
    auto waiter = arbrt::createThread([&] {
        arbrt::BlockingCall call;  // open across the wait
        waiterInside = true;
        m.lock();
        m.unlock();
    });
    EXPECT_EQ(arbrt::join(holder), 0);
    EXPECT_EQ(arbrt::join(waiter), 0);
    EXPECT_EQ(holderCalls.load(), 100);
}

// A bracket inside a bracket (a signal handler's call inside a bracketed one) is a no-op: the
// outer one covers the call, and lending and the outer close work as without it.
TEST_F(BlockingOneCore, NestedBracket_InnerIsANoOpAndLendingStillWorks) {
    Pipe p;
    const uint64_t lentBefore = arbrt::stats().coresLent;
    std::atomic<uint64_t> innerToken{1};
    std::atomic<char> got{0};
    auto reader = arbrt::createThread([&] {
        arbrt::BlockingCall outer;
        const uint64_t inner = arbrt::enterBlockingCall();
        innerToken = inner;
        char c = 0;
        EXPECT_EQ(read(p.readEnd(), &c, 1), 1);
        got = c;
        arbrt::exitBlockingCall(inner);
    });
    auto writer = arbrt::createThread([&] { ASSERT_EQ(write(p.writeEnd(), "n", 1), 1); });
    EXPECT_EQ(arbrt::join(reader), 0);
    EXPECT_EQ(arbrt::join(writer), 0);
    EXPECT_EQ(innerToken.load(), 0u);
    EXPECT_EQ(got.load(), 'n');
    EXPECT_GE(arbrt::stats().coresLent, lentBefore + 1);
}

// The monitor lends the core of a thread that computes inside a bracket (it cannot tell it from a
// blocked one), and that thread then waits, still inside: its carrier no longer runs the core, so
// the wait must leave that carrier (as a blocked call's return does) rather than dispatch the core
// beside the carrier it was lent to.
TEST_F(BlockingOneCore, LentWhileComputingInBracket_WaitLeavesTheCarrierAndCompletes) {
    const uint64_t lentBefore = arbrt::stats().coresLent;
    std::atomic<bool> otherRan{false};
    std::atomic<bool> insideDone{false};
    auto inside = arbrt::createThread([&] {
        arbrt::BlockingCall call;
        while (!otherRan.load()) {  // until the core is lent and the queued thread ran
        }
        arbrt::sleepFor(kMillisecond);
        insideDone = true;
    });
    auto other = arbrt::createThread([&] { otherRan = true; });
    EXPECT_EQ(arbrt::join(other), 0);
    EXPECT_EQ(arbrt::join(inside), 0);
    EXPECT_TRUE(insideDone.load());
    EXPECT_GE(arbrt::stats().coresLent, lentBefore + 1);
}

TEST(BlockingKernelThread, BracketOutsideUserThread_NoOp) {
    EXPECT_EQ(arbrt::enterBlockingCall(), 0u);
    arbrt::exitBlockingCall(0);  // nothing to undo, must not crash
}

TEST(BlockingRestart, LentThenStopped_NoCarrierLeft) {
    for (int round = 0; round < 3; ++round) {
        arbrt::RuntimeOptions options;
        options.numCores = 1;
        ASSERT_FALSE(arbrt::start(options).has_value());
        Pipe p;
        auto reader = arbrt::createThread([&] { EXPECT_EQ(blockingReadByte(p.readEnd()), 'q'); });
        auto writer = arbrt::createThread([&] { ASSERT_EQ(write(p.writeEnd(), "q", 1), 1); });
        EXPECT_EQ(arbrt::join(reader), 0);
        EXPECT_EQ(arbrt::join(writer), 0);
        ASSERT_TRUE(arbrt::stop());  // joins the monitor and every spare carrier
    }
}

}  // namespace

namespace {

class ReadinessOneCore : public arbrt_test::RuntimeTest<1> {};

TEST_F(ReadinessOneCore, WaitForReadablePipe_WokenByWriterOnSameCore) {
    Pipe p;
    std::atomic<int> result{-100};
    auto reader = arbrt::createThread([&] {
        arbrt::FdInterest fd{p.readEnd(), EPOLLIN, 0};
        result = arbrt::waitForFds(&fd, 1, arbrt::kWaitForever, nullptr);
        EXPECT_TRUE(fd.ready & EPOLLIN);
    });
    auto writer = arbrt::createThread([&] { ASSERT_EQ(write(p.writeEnd(), "w", 1), 1); });
    EXPECT_EQ(arbrt::join(reader), 0);
    EXPECT_EQ(arbrt::join(writer), 0);
    EXPECT_EQ(result.load(), 1);
    // No blocking call was made: the core never needed lending.
}

TEST_F(ReadinessOneCore, WaitWithDeadline_TimesOut) {
    Pipe p;
    auto t = arbrt::createThread([&] {
        arbrt::FdInterest fd{p.readEnd(), EPOLLIN, 0};
        EXPECT_EQ(arbrt::waitForFds(&fd, 1, arbrt::nowNs() + kMillisecond, nullptr), 0);
        EXPECT_EQ(fd.ready, 0u);
    });
    EXPECT_EQ(arbrt::join(t), 0);
}

TEST_F(ReadinessOneCore, SeveralFds_OnlyReadyOneReported) {
    Pipe a, b, c;
    auto t = arbrt::createThread([&] {
        arbrt::FdInterest fds[3] = {
            {a.readEnd(), EPOLLIN, 0}, {b.readEnd(), EPOLLIN, 0}, {c.readEnd(), EPOLLIN, 0}};
        EXPECT_EQ(arbrt::waitForFds(fds, 3, arbrt::kWaitForever, nullptr), 1);
        EXPECT_EQ(fds[0].ready, 0u);
        EXPECT_TRUE(fds[1].ready & EPOLLIN);
        EXPECT_EQ(fds[2].ready, 0u);
    });
    auto w = arbrt::createThread([&] { ASSERT_EQ(write(b.writeEnd(), "b", 1), 1); });
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(arbrt::join(w), 0);
}

TEST_F(ReadinessOneCore, TwoWaitersOneFd_BothWoken) {
    Pipe p;
    std::atomic<int> woken{0};
    auto waiter = [&] {
        arbrt::FdInterest fd{p.readEnd(), EPOLLIN, 0};
        EXPECT_EQ(arbrt::waitForFds(&fd, 1, arbrt::kWaitForever, nullptr), 1);
        woken.fetch_add(1);
    };
    auto t1 = arbrt::createThread(waiter);
    auto t2 = arbrt::createThread(waiter);
    auto w = arbrt::createThread([&] { ASSERT_EQ(write(p.writeEnd(), "2", 1), 1); });
    EXPECT_EQ(arbrt::join(t1), 0);
    EXPECT_EQ(arbrt::join(t2), 0);
    EXPECT_EQ(arbrt::join(w), 0);
    EXPECT_EQ(woken.load(), 2);
}

TEST_F(ReadinessOneCore, RegularFile_RefusedWithEperm) {
    char path[] = "/tmp/arbrt-io-XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    unlink(path);
    auto t = arbrt::createThread([&] {
        arbrt::FdInterest in{fd, EPOLLIN, 0};
        EXPECT_EQ(arbrt::waitForFds(&in, 1, arbrt::kWaitForever, nullptr), -EPERM);
        arbrt::FdInterest bad{-1, EPOLLIN, 0};
        EXPECT_EQ(arbrt::waitForFds(&bad, 1, arbrt::kWaitForever, nullptr), -EBADF);
    });
    EXPECT_EQ(arbrt::join(t), 0);
    close(fd);
}

TEST_F(ReadinessOneCore, Interrupted_ReturnsEintr) {
    Pipe p;
    static std::atomic<bool> interruptFlag;
    interruptFlag = false;
    auto t = arbrt::createThread([&] {
        arbrt::FdInterest fd{p.readEnd(), EPOLLIN, 0};
        EXPECT_EQ(
            arbrt::waitForFds(&fd, 1, arbrt::kWaitForever, [] { return interruptFlag.load(); }),
            -EINTR);
    });
    auto k = arbrt::createThread([&] {
        interruptFlag = true;
        arbrt::signal(t);
    });
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(arbrt::join(k), 0);
}

TEST(ReadinessKernelThread, NotAUserThread_Eperm) {
    arbrt::FdInterest fd{0, EPOLLIN, 0};
    EXPECT_EQ(arbrt::waitForFds(&fd, 1, 0, nullptr), -EPERM);
}

}  // namespace
