// block()/signal()/blockUntil(): Arachne's semantics with a one-permit memory, so a signal that
// arrives before block() is never lost. block() may return spuriously, so every wait here that is
// not on a pinned core in a known state re-checks its condition.
#include <vector>

#include "test_util.h"

namespace {

using arbrt_test::eventually;
using arbrt_test::kMillisecond;
using arbrt_test::kSecond;
using arbrt_test::pinnedTo;

class BlockSignal : public arbrt_test::RuntimeTest<2> {};

TEST_F(BlockSignal, Signal_WakesBlockedThread) {
    std::atomic<bool> flag{false};
    std::atomic<int> blocks{0};
    const arbrt::ThreadId t = arbrt::createThread([&] {
        while (!flag.load()) {
            blocks.fetch_add(1);
            arbrt::block();
        }
    });
    ASSERT_TRUE(eventually([&] { return blocks.load() > 0; }));
    flag = true;
    arbrt::signal(t);  // from a kernel thread
    EXPECT_EQ(arbrt::join(t), 0);
}

TEST_F(BlockSignal, Signal_BeforeBlockIsNotLost) {
    std::atomic<bool> started{false}, go{false}, returned{false};
    const arbrt::ThreadId t = arbrt::createThreadWith(pinnedTo(1), [&] {
        started = true;
        while (!go.load()) arbrt::yield();  // runnable, never parked, while the signal arrives
        arbrt::block();
        returned = true;
    });
    ASSERT_TRUE(eventually([&] { return started.load(); }));
    arbrt::signal(t);
    go = true;
    const bool ok = eventually([&] { return returned.load(); });
    if (!ok) arbrt::signal(t);  // the permit was lost: unstick it so the test can finish
    EXPECT_TRUE(ok) << "a signal sent before block() was lost";
    EXPECT_EQ(arbrt::join(t), 0);
}

TEST_F(BlockSignal, Signal_PermitsDoNotAccumulate) {
    // Two signals before block() leave one permit: the first block() returns, the second parks.
    std::atomic<int> phase{0};
    const arbrt::ThreadId driver = arbrt::createThreadWith(pinnedTo(1), [&] {
        std::atomic<bool> go{false};
        const arbrt::ThreadId t = arbrt::createThreadWith(pinnedTo(1), [&] {
            while (!go.load()) arbrt::yield();
            arbrt::block();
            phase = 1;
            arbrt::block();
            phase = 2;
        });
        arbrt::yield();  // t runs into its yield loop
        arbrt::signal(t);
        arbrt::signal(t);
        go = true;
        for (int i = 0; i < 3; ++i) arbrt::yield();  // t consumes the permit, then parks
        EXPECT_EQ(phase.load(), 1);
        arbrt::signal(t);
        EXPECT_EQ(arbrt::join(t), 0);
        EXPECT_EQ(phase.load(), 2);
    });
    ASSERT_EQ(arbrt::join(driver), 0);
}

TEST_F(BlockSignal, Signal_NullHandleIsIgnored) {
    arbrt::signal(arbrt::ThreadId{});
    const arbrt::ThreadId t = arbrt::createThread([] { arbrt::signal(arbrt::ThreadId{}); });
    EXPECT_EQ(arbrt::join(t), 0);
}

TEST_F(BlockSignal, Signal_ToStaleHandleIsIgnored) {
    const arbrt::ThreadId old = arbrt::createThread([] {});
    ASSERT_EQ(arbrt::join(old), 0);
    for (int i = 0; i < 10; ++i) arbrt::signal(old);
    SUCCEED();  // recycled-context cases: stale_handle_test.cc
}

TEST_F(BlockSignal, BlockUntil_ReturnsByDeadline) {
    std::atomic<uint64_t> deadline{0}, after{0};
    const arbrt::ThreadId t = arbrt::createThread([&] {
        deadline = arbrt::nowNs() + 2 * kMillisecond;
        arbrt::blockUntil(deadline);  // nobody signals it
        after = arbrt::nowNs();
    });
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_GE(after.load(), deadline.load());
}

TEST_F(BlockSignal, BlockUntil_PastDeadlineReturnsAtOnce) {
    const arbrt::ThreadId t = arbrt::createThread([] {
        arbrt::blockUntil(0);
        arbrt::blockUntil(arbrt::nowNs() - 1);
    });
    EXPECT_EQ(arbrt::join(t), 0);
}

TEST_F(BlockSignal, BlockUntil_SignalEndsWaitEarly) {
    std::atomic<uint64_t> deadline{0}, after{0};
    const arbrt::ThreadId driver = arbrt::createThreadWith(pinnedTo(1), [&] {
        std::atomic<bool> parked{false};
        const arbrt::ThreadId t = arbrt::createThreadWith(pinnedTo(1), [&] {
            deadline = arbrt::nowNs() + 60 * kSecond;
            parked = true;
            arbrt::blockUntil(deadline);
            after = arbrt::nowNs();
        });
        while (!parked.load()) arbrt::yield();  // on one core: t has parked when we run again
        arbrt::signal(t);
        arbrt::join(t);
    });
    ASSERT_EQ(arbrt::join(driver), 0);
    EXPECT_LT(after.load(), deadline.load());
}

TEST_F(BlockSignal, BlockUntil_LeavesNoTimerBehind) {
    // Woken early many times; the abandoned deadlines must not wake a later block() spuriously.
    std::atomic<bool> earlyReturn{false};
    const arbrt::ThreadId driver = arbrt::createThreadWith(pinnedTo(1), [&] {
        std::atomic<int> stage{0};
        const arbrt::ThreadId t = arbrt::createThreadWith(pinnedTo(1), [&] {
            bool anyLate = false;  // a round whose deadline passed first leaves a permit (legit)
            for (int i = 0; i < 100; ++i) {
                stage = i + 1;
                const uint64_t deadline = arbrt::nowNs() + uint64_t(i + 1) * 20'000;  // <= 2 ms
                arbrt::blockUntil(deadline);
                if (arbrt::nowNs() >= deadline) anyLate = true;
            }
            stage = 1000;
            arbrt::block();  // only the final signal (or one leftover permit) may end this
            bool early = stage.load() != 1001;
            if (early && anyLate) {
                arbrt::block();
                early = stage.load() != 1001;
            }
            earlyReturn = early;
        });
        // Signal t once for each stage we see it park in (one core: when we run, t has parked).
        // If the host delays us past a deadline, t moves on by itself; we then skip that stage.
        int signalled = 0;
        for (int seen = stage.load(); seen != 1000; seen = stage.load()) {
            if (seen != signalled) {
                arbrt::signal(t);
                signalled = seen;
            }
            arbrt::yield();
        }
        // Every earlier deadline passes during this window; a stale timer would wake t here.
        const uint64_t until = arbrt::nowNs() + 3 * kMillisecond;
        while (arbrt::nowNs() < until) arbrt::yield();
        stage = 1001;
        arbrt::signal(t);
        arbrt::join(t);
    });
    ASSERT_EQ(arbrt::join(driver), 0);
    EXPECT_FALSE(earlyReturn.load());
}

TEST_F(BlockSignal, Signal_PingPongAcrossCores) {
    // Two threads on different cores hand a turn back and forth with block/signal.
    constexpr int kRounds = 5'000;
    std::atomic<int> turn{0};
    arbrt::ThreadId ids[2];  // written before the gate opens, read after
    std::atomic<int> ready{0};
    auto player = [&](int me) {
        ready.fetch_add(1);
        while (ready.load() != 2) arbrt::yield();
        const arbrt::ThreadId other = ids[1 - me];
        for (int r = 0; r < kRounds; ++r) {
            while (turn.load() != me) arbrt::block();
            turn = 1 - me;
            arbrt::signal(other);
        }
    };
    arbrt::Semaphore gate;
    const arbrt::ThreadId a = arbrt::createThreadWith(pinnedTo(0), [&] {
        gate.wait();
        player(0);
    });
    const arbrt::ThreadId b = arbrt::createThreadWith(pinnedTo(1), [&] {
        gate.wait();
        player(1);
    });
    ids[0] = a;
    ids[1] = b;
    gate.post();
    gate.post();
    EXPECT_EQ(arbrt::join(a), 0);
    EXPECT_EQ(arbrt::join(b), 0);
    EXPECT_EQ(turn.load(), 0);
}

}  // namespace
