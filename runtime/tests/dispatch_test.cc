// Blocked threads must not slow the dispatcher. Timing is the benchmark's job (BM_SignalBlocked);
// here the structural property: a block/signal handoff costs the same number of context switches
// with 0 and with 1,000 threads blocked on the same core.
#include <vector>

#include "test_util.h"

namespace {

using arbrt_test::pinnedTo;

class Dispatch : public arbrt_test::RuntimeTest<2> {};

constexpr int kCore = 0;

// On one core: parks `blocked` threads, then measures the context switches of `rounds` block/signal
// handoffs between the driver and a partner; returns the count (or ~0 on failure).
uint64_t switchesForHandoffs(int blocked, int rounds) {
    uint64_t switches = ~uint64_t{0};
    const arbrt::ThreadId driver = arbrt::createThreadWith(pinnedTo(kCore), [&] {
        std::atomic<int> parked{0};
        std::atomic<bool> release{false};
        std::vector<arbrt::ThreadId> sleepers;
        for (int i = 0; i < blocked; ++i) {
            sleepers.push_back(arbrt::createThreadWith(pinnedTo(kCore), [&] {
                parked.fetch_add(1);
                while (!release.load()) arbrt::block();
            }));
        }
        std::atomic<int> turn{0};  // 0: driver, 1: partner
        const arbrt::ThreadId self = arbrt::self();
        const arbrt::ThreadId partner = arbrt::createThreadWith(pinnedTo(kCore), [&] {
            parked.fetch_add(1);
            for (int r = 0; r < rounds; ++r) {
                while (turn.load() != 1) arbrt::block();
                turn = 0;
                arbrt::signal(self);
            }
        });
        // One core, FIFO: when we run again, every other thread has run up to its block().
        while (parked.load() != blocked + 1) arbrt::yield();
        const uint64_t before = arbrt::stats().contextSwitches;
        for (int r = 0; r < rounds; ++r) {
            turn = 1;
            arbrt::signal(partner);
            while (turn.load() != 0) arbrt::block();
        }
        const uint64_t after = arbrt::stats().contextSwitches;
        switches = after - before;
        arbrt::join(partner);
        release = true;
        for (arbrt::ThreadId t : sleepers) arbrt::signal(t);
        for (arbrt::ThreadId t : sleepers) arbrt::join(t);
    });
    EXPECT_EQ(arbrt::join(driver), 0);
    return switches;
}

TEST_F(Dispatch, Signal_SwitchesPerHandoffIndependentOfBlockedThreads) {
    constexpr int kRounds = 1'000;
    const uint64_t none = switchesForHandoffs(0, kRounds);
    const uint64_t many = switchesForHandoffs(1'000, kRounds);
    EXPECT_EQ(many, none);
    EXPECT_GE(none, uint64_t(2 * kRounds) - 1);  // a handoff each way is a switch each way
    EXPECT_LE(none, uint64_t(2 * kRounds) + 2);
}

TEST_F(Dispatch, Yield_SwitchesIndependentOfBlockedThreads) {
    // Two yielders on a core with 1,000 blocked threads: each yield switches to the other
    // yielder, never to a blocked thread.
    constexpr int kYields = 1'000;
    for (int blocked : {0, 1'000}) {
        uint64_t switches = 0;
        const arbrt::ThreadId driver = arbrt::createThreadWith(pinnedTo(kCore), [&] {
            std::atomic<int> parked{0};
            std::atomic<bool> release{false};
            std::vector<arbrt::ThreadId> sleepers;
            for (int i = 0; i < blocked; ++i) {
                sleepers.push_back(arbrt::createThreadWith(pinnedTo(kCore), [&] {
                    parked.fetch_add(1);
                    while (!release.load()) arbrt::block();
                }));
            }
            std::atomic<int> partnerYields{0};
            std::atomic<bool> go{false};
            const arbrt::ThreadId partner = arbrt::createThreadWith(pinnedTo(kCore), [&] {
                parked.fetch_add(1);
                while (!go.load()) arbrt::block();
                for (int i = 0; i < kYields; ++i) {
                    arbrt::yield();
                    partnerYields.fetch_add(1);
                }
            });
            while (parked.load() != blocked + 1) arbrt::yield();
            go = true;
            arbrt::signal(partner);
            const uint64_t before = arbrt::stats().contextSwitches;
            for (int i = 0; i < kYields; ++i) arbrt::yield();
            switches = arbrt::stats().contextSwitches - before;
            arbrt::join(partner);
            EXPECT_EQ(partnerYields.load(), kYields);
            release = true;
            for (arbrt::ThreadId t : sleepers) arbrt::signal(t);
            for (arbrt::ThreadId t : sleepers) arbrt::join(t);
        });
        ASSERT_EQ(arbrt::join(driver), 0);
        // Each of our yields switches to the partner, whose yield switches back.
        EXPECT_EQ(switches, uint64_t(2 * kYields)) << blocked << " blocked threads";
    }
}

}  // namespace
