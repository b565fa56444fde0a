// Stale handles: once a thread has been joined (or has exited detached), operations through its old
// handle fail with ESRCH or do nothing, even after its context slot holds a new thread.
//
// Everything runs on core 1 among pinned threads (never stolen), so the driver can check "did the
// new occupant wake up?" without sleeping (see runScenario).
#include <cerrno>
#include <set>
#include <vector>

#include "test_util.h"

namespace {

using arbrt_test::kSecond;
using arbrt_test::pinnedTo;

class StaleHandle : public arbrt_test::RuntimeTest<2> {};

constexpr int kThreads = 64;
constexpr int kCore = 1;

// Creates kThreads short-lived pinned threads, half joined and half detached, and returns their
// handles once every one of them is gone (so their contexts are back in the pool).
std::vector<arbrt::ThreadId> makeStaleHandles() {
    std::vector<arbrt::ThreadId> stale;
    std::atomic<int> detachedDone{0};
    arbrt::ThreadAttributes detached = pinnedTo(kCore);
    detached.detached = true;
    for (int i = 0; i < kThreads; ++i) {
        const bool isDetached = i % 2 == 1;
        stale.push_back(arbrt::createThreadWith(isDetached ? detached : pinnedTo(kCore),
                                                [&detachedDone, isDetached] {
                                                    if (isDetached) detachedDone.fetch_add(1);
                                                }));
    }
    for (int i = 0; i < kThreads; i += 2) EXPECT_EQ(arbrt::join(stale[size_t(i)]), 0);
    // Detached ones finish their exit before the next thread on the core runs (the exit is
    // completed by whoever is switched to), so one more yield after the last makes them all free.
    while (detachedDone.load() != kThreads / 2) arbrt::yield();
    arbrt::yield();
    return stale;
}

// How many handles in `fresh` reuse a context slot of `stale` (with another generation).
int countReused(const std::vector<arbrt::ThreadId>& stale,
                const std::vector<arbrt::ThreadId>& fresh) {
    std::set<void*> old;
    for (arbrt::ThreadId t : stale) old.insert(t.context);
    int reused = 0;
    for (arbrt::ThreadId t : fresh) {
        if (old.count(t.context)) {
            ++reused;
            EXPECT_NE(t.generation, 0u);
        }
    }
    return reused;
}

// Every kind of operation through stale handles: all ESRCH, signals ignored.
void poke(const std::vector<arbrt::ThreadId>& stale) {
    for (arbrt::ThreadId t : stale) {
        arbrt::signal(t);
        arbrt::signal(t);
        EXPECT_EQ(arbrt::join(t), ESRCH);
        EXPECT_EQ(arbrt::tryJoin(t), ESRCH);
        EXPECT_EQ(arbrt::joinUntil(t, arbrt::nowNs() + kSecond), ESRCH);
        EXPECT_EQ(arbrt::detach(t), ESRCH);
        arbrt::signal(t);
    }
}

// The occupants of recycled contexts block; the driver pokes the stale handles and checks that no
// occupant woke. `parkFirst`: the occupants are parked in block() during the pokes; otherwise they
// have not even run yet (runnable, not parked), where a wrongly delivered signal would leave a
// permit that makes their first block() return at once.
//
// "Did an occupant wake?" without sleeping: an occupant that returns from block() without the
// legitimate signal counts itself and parks again. Everything here is pinned to one core and the
// occupants only ever park, so each yield of the driver lets every runnable occupant run (and
// park) before the driver continues; a few yields drain them all.
void runScenario(bool parkFirst) {
    const std::vector<arbrt::ThreadId> stale = makeStaleHandles();
    std::atomic<int> started{0}, wokeEarly{0}, finished{0};
    std::atomic<bool> legit{false};
    std::vector<arbrt::ThreadId> fresh;
    for (int i = 0; i < kThreads; ++i) {
        fresh.push_back(arbrt::createThreadWith(pinnedTo(kCore), [&, i] {
            started.fetch_add(1);
            for (;;) {
                arbrt::block();
                if (legit.load()) break;
                wokeEarly.fetch_add(1);
            }
            finished.fetch_add(1);
            arbrt::exit(reinterpret_cast<void*>(uintptr_t(i + 1)));
        }));
    }
    const int reused = countReused(stale, fresh);
    // (No early return: the occupants wait for this driver.)
    EXPECT_GT(reused, 0) << "no context was recycled: the test would prove nothing";
    ::testing::Test::RecordProperty("reusedContexts", reused);

    if (parkFirst) {
        while (started.load() != kThreads) arbrt::yield();  // all ran into block() and parked
        poke(stale);
    } else {
        EXPECT_EQ(started.load(), 0);  // none has run: we have not switched since creating them
        poke(stale);
        while (started.load() != kThreads) arbrt::yield();
    }
    for (int i = 0; i < 3; ++i) arbrt::yield();  // anyone made runnable runs now
    EXPECT_EQ(wokeEarly.load(), 0);
    EXPECT_EQ(finished.load(), 0);

    legit = true;
    for (arbrt::ThreadId t : fresh) arbrt::signal(t);
    for (int i = 0; i < kThreads; ++i) {
        void* result = nullptr;
        EXPECT_EQ(arbrt::join(fresh[size_t(i)], &result), 0);
        EXPECT_EQ(result, reinterpret_cast<void*>(uintptr_t(i + 1)));
    }
    EXPECT_EQ(wokeEarly.load(), 0);
    EXPECT_EQ(finished.load(), kThreads);
    poke(stale);  // still harmless
}

TEST_F(StaleHandle, Signal_DoesNotWakeParkedNewOccupant) {
    const arbrt::ThreadId driver =
        arbrt::createThreadWith(pinnedTo(kCore), [] { runScenario(true); });
    ASSERT_EQ(arbrt::join(driver), 0);
}

TEST_F(StaleHandle, Signal_LeavesNoPermitForNewOccupant) {
    const arbrt::ThreadId driver =
        arbrt::createThreadWith(pinnedTo(kCore), [] { runScenario(false); });
    ASSERT_EQ(arbrt::join(driver), 0);
}

TEST_F(StaleHandle, JoinDetach_EsrchAndNewOccupantStaysJoinable) {
    // From the kernel thread: stale joins and detaches must not claim the new occupant.
    std::vector<arbrt::ThreadId> stale;
    const arbrt::ThreadId maker =
        arbrt::createThreadWith(pinnedTo(kCore), [&] { stale = makeStaleHandles(); });
    ASSERT_EQ(arbrt::join(maker), 0);
    arbrt::Semaphore release;
    std::vector<arbrt::ThreadId> fresh;
    const arbrt::ThreadId creator = arbrt::createThreadWith(pinnedTo(kCore), [&] {
        for (int i = 0; i < kThreads; ++i) {
            fresh.push_back(arbrt::createThreadWith(pinnedTo(kCore), [&release, i] {
                release.wait();
                arbrt::exit(reinterpret_cast<void*>(uintptr_t(i + 100)));
            }));
        }
    });
    ASSERT_EQ(arbrt::join(creator), 0);
    const int reused = countReused(stale, fresh);
    EXPECT_GT(reused, 0) << "no context was recycled: the test would prove nothing";
    poke(stale);
    for (arbrt::ThreadId t : fresh) EXPECT_EQ(arbrt::tryJoin(t), EBUSY);  // still theirs
    for (int i = 0; i < kThreads; ++i) release.post();
    for (int i = 0; i < kThreads; ++i) {
        void* result = nullptr;
        EXPECT_EQ(arbrt::join(fresh[size_t(i)], &result), 0);
        EXPECT_EQ(result, reinterpret_cast<void*>(uintptr_t(i + 100)));
    }
    poke(stale);
    poke(fresh);  // now stale too
}

}  // namespace
