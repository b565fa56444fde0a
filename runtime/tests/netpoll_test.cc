// Carriers as the netpoller (io_poller.cc): an idle carrier waits on the runtime's epoll and runs
// the threads its events make ready; new work, a steal request, a core release and stop interrupt
// that wait through the epoll's wake-up eventfd; readiness is still delivered (by the monitor)
// while every carrier is busy.
//
// Nothing here sleeps to order events: "the carrier is the netpoller" is read from the role word
// (netpollHolder()), and every wait is a bounded spin on an atomic (arbrt_test::eventually), whose
// limit is only a hang guard. A lost wake-up therefore fails the test instead of slowing it. The
// racing variants let the waking side act at whatever point the carrier has reached (polling,
// taking the role, re-checking, inside epoll_pwait2), many rounds each.
#include <arbrt/io.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "monitor/io_poller.h"
#include "test_util.h"

namespace {

using arbrt::detail::netpollCounts;
using arbrt::detail::netpollHolder;
using arbrt_test::eventually;
using arbrt_test::pinnedTo;

// A pipe closed on destruction.
class Pipe {
  public:
    Pipe() { ok_ = pipe2(fds_, O_CLOEXEC) == 0; }
    ~Pipe() {
        if (ok_) {
            close(fds_[0]);
            close(fds_[1]);
        }
    }
    Pipe(const Pipe&) = delete;
    Pipe& operator=(const Pipe&) = delete;
    bool ok() const { return ok_; }
    int readEnd() const { return fds_[0]; }
    int writeEnd() const { return fds_[1]; }

  private:
    int fds_[2] = {-1, -1};
    bool ok_ = false;
};

// Threads made runnable by any poller so far.
uint64_t readiedSoFar() {
    const auto c = netpollCounts();
    return c.readiedByNetpoller + c.readiedByPeek + c.readiedByMonitor;
}

// A user thread that waits for the pipe to become readable and records the outcome.
struct Waiter {
    std::atomic<int> result{-100};
    std::atomic<bool> done{false};
    arbrt::ThreadId thread;

    void start(const Pipe& p) {
        const int fd = p.readEnd();
        thread = arbrt::createThread([this, fd] {
            arbrt::FdInterest in{fd, EPOLLIN, 0};
            result.store(arbrt::waitForFds(&in, 1, arbrt::kWaitForever, nullptr));
            done.store(true);
        });
    }
};

bool writeOne(const Pipe& p) {
    return write(p.writeEnd(), "x", 1) == 1;
}

class NetpollOne : public arbrt_test::RuntimeTest<1> {};
class NetpollTwo : public arbrt_test::RuntimeTest<2> {};

// The only carrier, idle with a thread waiting for a pipe, is the netpoller; the write wakes it in
// epoll and the waiter runs. Fails (hang guard) if nobody waits on the epoll.
TEST_F(NetpollOne, Readiness_NetpollerRunsWaiter) {
    uint64_t byNetpoller = 0;
    for (int round = 0; round < 200; ++round) {
        Pipe p;
        ASSERT_TRUE(p.ok());
        Waiter w;
        const uint64_t before = readiedSoFar();
        const uint64_t netpollerBefore = netpollCounts().readiedByNetpoller;
        w.start(p);
        // The waiter is registered and the carrier, with nothing else to run, holds the role.
        ASSERT_TRUE(eventually(
            [] { return netpollCounts().waitsInProgress == 1 && netpollHolder() == 0; }));
        ASSERT_TRUE(writeOne(p));
        ASSERT_TRUE(eventually([&] { return w.done.load(); })) << "round " << round;
        EXPECT_EQ(arbrt::join(w.thread), 0);
        EXPECT_EQ(w.result.load(), 1);
        EXPECT_EQ(readiedSoFar(), before + 1);  // delivered exactly once
        byNetpoller += netpollCounts().readiedByNetpoller - netpollerBefore;
    }
    // The holder can only leave the role on a stale wake-up (then the event is caught by its next
    // look, counted as a peek): most rounds are the netpoller's own.
    EXPECT_GT(byNetpoller, 100u);
}

// The write races the carrier going idle (polling, taking the role, re-checking, entering epoll)
// and the registration itself; two cores, so the other carrier's transitions race too.
TEST_F(NetpollTwo, Readiness_RacesCarrierGoingToSleep) {
    for (int round = 0; round < 2000; ++round) {
        Pipe p;
        ASSERT_TRUE(p.ok());
        Waiter w;
        w.start(p);
        if (round % 2) sched_yield();  // vary where the write lands
        ASSERT_TRUE(writeOne(p));
        ASSERT_TRUE(eventually([&] { return w.done.load(); })) << "round " << round;
        EXPECT_EQ(arbrt::join(w.thread), 0);
        EXPECT_EQ(w.result.load(), 1);
    }
}

// Several waiters ready at once: the netpoller runs one and queues the others on its core; all run.
TEST_F(NetpollTwo, Readiness_SeveralWaitersAllRun) {
    for (int round = 0; round < 200; ++round) {
        Pipe p;
        ASSERT_TRUE(p.ok());
        Waiter w[4];
        for (Waiter& x : w) x.start(p);
        ASSERT_TRUE(eventually([] { return netpollCounts().waitsInProgress == 4; }));
        ASSERT_TRUE(writeOne(p));
        for (Waiter& x : w) {
            ASSERT_TRUE(eventually([&] { return x.done.load(); })) << "round " << round;
            EXPECT_EQ(arbrt::join(x.thread), 0);
            EXPECT_EQ(x.result.load(), 1);
        }
    }
}

// New work from outside the runtime (a kernel thread creates a user thread) interrupts the
// carrier blocked in epoll: with no timer it would otherwise wait there forever.
TEST_F(NetpollOne, NewWork_InterruptsNetpoller) {
    for (int round = 0; round < 200; ++round) {
        ASSERT_TRUE(eventually([] { return netpollHolder() == 0; }));
        std::atomic<bool> ran{false};
        const arbrt::ThreadId t = arbrt::createThread([&] { ran.store(true); });
        ASSERT_TRUE(eventually([&] { return ran.load(); })) << "round " << round;
        EXPECT_EQ(arbrt::join(t), 0);
    }
}

// The same, the creation racing the carrier's way into epoll.
TEST_F(NetpollTwo, NewWork_RacesCarrierGoingToSleep) {
    for (int round = 0; round < 2000; ++round) {
        std::atomic<bool> ran{false};
        const arbrt::ThreadId t = arbrt::createThread([&] { ran.store(true); });
        ASSERT_TRUE(eventually([&] { return ran.load(); })) << "round " << round;
        EXPECT_EQ(arbrt::join(t), 0);
        if (round % 3 == 0) sched_yield();
    }
}

// A steal request (wakep) reaches a carrier blocked in epoll: the runner's core spins without ever
// switching until a thread it woke into its runNext slot has run, which only the netpolling core
// can do by stealing it. The driver goes to whichever core does not hold the role: which core ends
// up with it is a race (a carrier that finds the role taken sleeps on its futex, and nothing hands
// the role over when its holder leaves to run work), so a test that picked the netpolling core in
// advance could wait for a role that never moves there.
TEST_F(NetpollTwo, StealRequest_InterruptsNetpoller) {
    for (int round = 0; round < 100; ++round) {
        // Both carriers idle: one of them holds the role.
        int netpolling = -1;
        ASSERT_TRUE(eventually([&] { return (netpolling = netpollHolder()) != -1; }))
            << "round " << round;
        const int runner = 1 - netpolling;
        std::atomic<bool> armed{false}, stolenRan{false};
        const arbrt::ThreadId driver = arbrt::createThreadWith(pinnedTo(runner), [&] {
            while (!armed.load()) arbrt::yield();
            arbrt::ThreadAttributes anywhere;
            anywhere.core = runner;
            const arbrt::ThreadId t =
                arbrt::createThreadWith(anywhere, [&] { stolenRan.store(true); });
            while (!stolenRan.load(std::memory_order_acquire)) {
                // no switch: the thread waits in runNext until the other core steals it
            }
            arbrt::join(t);
        });
        // The driver's creation may wake the netpoller too; with the runner busy, it is the only
        // idle carrier and takes the role again.
        ASSERT_TRUE(eventually([&] { return netpollHolder() == netpolling; })) << "round " << round;
        armed.store(true);
        ASSERT_TRUE(eventually([&] { return stolenRan.load(); })) << "round " << round;
        EXPECT_EQ(arbrt::join(driver), 0);
    }
}

// Every carrier busy (the only one runs a thread that keeps yielding, so it never goes idle and
// nobody holds the role): the monitor's look delivers the readiness, and the waiter runs.
TEST_F(NetpollOne, ReadinessWhileEveryCarrierBusy_DeliveredByMonitor) {
    for (int round = 0; round < 20; ++round) {
        Pipe p;
        ASSERT_TRUE(p.ok());
        std::atomic<bool> spinning{false}, stop{false};
        const arbrt::ThreadId spinner = arbrt::createThread([&] {
            spinning.store(true);
            while (!stop.load()) arbrt::yield();
        });
        Waiter w;
        w.start(p);
        ASSERT_TRUE(eventually([&] {
            return spinning.load() && netpollCounts().waitsInProgress == 1 && netpollHolder() == -1;
        }));
        const uint64_t monitorBefore = netpollCounts().readiedByMonitor;
        ASSERT_TRUE(writeOne(p));
        ASSERT_TRUE(eventually([&] { return w.done.load(); })) << "round " << round;
        EXPECT_EQ(netpollCounts().readiedByMonitor, monitorBefore + 1);
        stop.store(true);
        EXPECT_EQ(arbrt::join(w.thread), 0);
        EXPECT_EQ(arbrt::join(spinner), 0);
        EXPECT_EQ(w.result.load(), 1);
    }
}

// releaseCore() on the core whose carrier waits in epoll: the release wakes it, the core goes,
// the role is free for the other carrier, and readiness is still delivered; then it comes back.
TEST_F(NetpollTwo, ReleaseCore_WhileInEpoll) {
    for (int round = 0; round < 100; ++round) {
        int holder = -1;
        ASSERT_TRUE(eventually([&] { return (holder = netpollHolder()) != -1; }));
        ASSERT_EQ(arbrt::releaseCore(holder), 0) << "round " << round;
        EXPECT_FALSE(arbrt::activeCores().test(size_t(holder)));
        EXPECT_NE(netpollHolder(), holder);  // a released carrier parks, outside the role
        Pipe p;
        ASSERT_TRUE(p.ok());
        Waiter w;
        w.start(p);
        ASSERT_TRUE(writeOne(p));
        ASSERT_TRUE(eventually([&] { return w.done.load(); })) << "round " << round;
        EXPECT_EQ(arbrt::join(w.thread), 0);
        ASSERT_EQ(arbrt::acquireCore(holder), 0);
    }
}

// The release racing the carrier's way into epoll.
TEST_F(NetpollTwo, ReleaseCore_RacesCarrierGoingToSleep) {
    for (int round = 0; round < 500; ++round) {
        const int core = round % 2;
        std::atomic<bool> ran{false};
        const arbrt::ThreadId t = arbrt::createThread([&] { ran.store(true); });
        ASSERT_EQ(arbrt::releaseCore(core), 0) << "round " << round;
        ASSERT_TRUE(eventually([&] { return ran.load(); })) << "round " << round;
        EXPECT_EQ(arbrt::join(t), 0);
        ASSERT_EQ(arbrt::acquireCore(core), 0);
    }
}

// stop() while a carrier waits in epoll returns (the stop wakes it through the eventfd); and stop
// right after start, racing the carriers' way into epoll.
TEST(NetpollStop, Stop_WithCarrierInEpoll) {
    for (int round = 0; round < 40; ++round) {
        arbrt::RuntimeOptions options;
        options.numCores = 2;
        const auto err = arbrt::start(options);
        ASSERT_FALSE(err.has_value()) << err->message;
        if (round % 2 == 0) {
            ASSERT_TRUE(eventually([] { return netpollHolder() != -1; }));
        }
        ASSERT_TRUE(arbrt::stop()) << "round " << round;
    }
}

}  // namespace
