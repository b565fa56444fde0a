// Thread classes drive placement (core_policy.h): an exclusive thread's core runs nothing else and
// the thread never leaves it; the reservation ends at exit, on reclassification and when the core
// is released; with no core to spare the thread runs as normal. A batch thread runs on a core only
// when no normal thread is runnable there, still progresses on an otherwise idle core, and
// thieves take normal threads first.
//
// Determinism: which core a thread runs on is observed from inside (currentCore()), and the
// properties hold for any interleaving the host gives the carriers; the batch-order tests use the
// single-core FIFO argument (test_util.h); the stealing test keeps both cores' runners computing
// without switching until it lets one go, so only that core can take the queued threads.
#include <atomic>
#include <vector>

#include "test_util.h"

namespace {

using arbrt::ThreadClass;
using arbrt_test::eventually;

arbrt::ThreadAttributes withClass(ThreadClass threadClass, int core = -1) {
    arbrt::ThreadAttributes attributes;
    attributes.threadClass = threadClass;
    attributes.core = core;
    return attributes;
}

// Creates a thread running fn(arg) with `attributes`; *fellBack says whether an exclusive thread
// got no core of its own (launchThread's report).
arbrt::ThreadId spawnReporting(const arbrt::ThreadAttributes& attributes, void* (*fn)(void*),
                               void* arg, bool* fellBack) {
    int err = 0;
    arbrt::detail::ThreadContext* context = arbrt::detail::allocateThread(attributes, &err);
    if (!context) return {};
    return arbrt::detail::launchThread(context, attributes, fn, arg, fellBack);
}

// Spins without calling the runtime, so its core never switches (a cooperative runtime cannot
// take the core from it) until `release` is set.
void computeUntil(const std::atomic<bool>& release) {
    while (!release.load(std::memory_order_relaxed)) __builtin_ia32_pause();
}

class Classes1 : public arbrt_test::RuntimeTest<1> {};
class Classes2 : public arbrt_test::RuntimeTest<2> {};
class Classes3 : public arbrt_test::RuntimeTest<3> {};

// --- Exclusive.

TEST_F(Classes3, ExclusiveThread_CoreRunsNothingElseWithMoreRunnableThanCores) {
    std::atomic<bool> stop{false};
    std::atomic<int> exclusiveCore{-1};
    std::atomic<int> exclusiveMoved{0};
    arbrt::ThreadId exclusive = arbrt::createThreadWith(withClass(ThreadClass::exclusive), [&] {
        exclusiveCore = arbrt::currentCore();
        for (int i = 0; !stop.load(); ++i) {
            if (arbrt::currentCore() != exclusiveCore.load()) exclusiveMoved.fetch_add(1);
            if (i % 16 == 0) {
                arbrt::sleepFor(20 * arbrt_test::kMicrosecond);  // parks: its core idles
            } else {
                arbrt::yield();
            }
        }
    });
    ASSERT_TRUE(eventually([&] { return exclusiveCore.load() >= 0; }));
    const int reserved = arbrt::reservedCoreOf(exclusive);
    ASSERT_EQ(reserved, exclusiveCore.load());

    // Eight normal threads on the two other cores: yielding, sleeping (timers fire and wake them
    // anywhere), creating and joining children (placement), so there is always more runnable work
    // than cores and idle cores look for work to steal.
    std::atomic<int> onReservedCore{0};
    std::atomic<int> iterations{0};
    std::vector<arbrt::ThreadId> workers;
    for (int w = 0; w < 8; ++w) {
        workers.push_back(arbrt::createThread([&, w] {
            for (int i = 0; i < 400; ++i) {
                if (arbrt::currentCore() == reserved) onReservedCore.fetch_add(1);
                arbrt_test::burn(2'000);
                if (i % 50 == w) {
                    arbrt::sleepFor(10 * arbrt_test::kMicrosecond);
                } else if (i % 100 == 7) {
                    arbrt::ThreadId child = arbrt::createThread([&] {
                        if (arbrt::currentCore() == reserved) onReservedCore.fetch_add(1);
                    });
                    arbrt::join(child);
                } else {
                    arbrt::yield();
                }
                iterations.fetch_add(1);
            }
        }));
    }
    for (arbrt::ThreadId t : workers) EXPECT_EQ(arbrt::join(t), 0);
    stop = true;
    EXPECT_EQ(arbrt::join(exclusive), 0);
    EXPECT_EQ(iterations.load(), 8 * 400);
    EXPECT_EQ(onReservedCore.load(), 0);
    EXPECT_EQ(exclusiveMoved.load(), 0);
    EXPECT_EQ(arbrt::stats().coresReserved, 1u);
    EXPECT_EQ(arbrt::stats().exclusiveFallbacks, 0u);
}

TEST_F(Classes3, ExclusiveThread_ReservesThePreferredCore) {
    arbrt::Semaphore done;
    arbrt::ThreadId exclusive =
        arbrt::createThreadWith(withClass(ThreadClass::exclusive, 2), [&] { done.wait(); });
    EXPECT_EQ(arbrt::reservedCoreOf(exclusive), 2);
    done.post();
    EXPECT_EQ(arbrt::join(exclusive), 0);
}

TEST_F(Classes2, ExclusiveThread_ReservationReleasedAtExit) {
    arbrt::Semaphore done;
    arbrt::ThreadId exclusive =
        arbrt::createThreadWith(withClass(ThreadClass::exclusive, 1), [&] { done.wait(); });
    ASSERT_EQ(arbrt::reservedCoreOf(exclusive), 1);
    // While reserved, a thread that prefers core 1 (or is even pinned there) runs elsewhere.
    std::atomic<int> ranOn{-1};
    arbrt::ThreadId probe =
        arbrt::createThreadWith(arbrt_test::pinnedTo(1), [&] { ranOn = arbrt::currentCore(); });
    EXPECT_EQ(arbrt::join(probe), 0);
    EXPECT_EQ(ranOn.load(), 0);
    done.post();
    EXPECT_EQ(arbrt::join(exclusive), 0);
    EXPECT_EQ(arbrt::reservedCoreOf(exclusive), -1);  // stale handle
    // Shared again: a thread pinned there runs there, and another exclusive thread can have it.
    arbrt::ThreadId after =
        arbrt::createThreadWith(arbrt_test::pinnedTo(1), [&] { ranOn = arbrt::currentCore(); });
    EXPECT_EQ(arbrt::join(after), 0);
    EXPECT_EQ(ranOn.load(), 1);
    arbrt::ThreadId again =
        arbrt::createThreadWith(withClass(ThreadClass::exclusive, 1), [&] { done.wait(); });
    EXPECT_EQ(arbrt::reservedCoreOf(again), 1);
    done.post();
    EXPECT_EQ(arbrt::join(again), 0);
    EXPECT_EQ(arbrt::stats().coresReserved, 2u);
}

TEST_F(Classes2, ExclusiveThread_ThreadRunningOnTheCoreLeavesAtItsNextYield) {
    // A normal thread spins (yielding) on core 1; an exclusive thread then reserves core 1. The
    // first yield after the reservation takes the normal thread away, for good. Core 0 is kept
    // busy, so it never steals the normal thread before that.
    arbrt_test::CoreOccupier occupier({0});
    ASSERT_TRUE(occupier.ready());
    std::atomic<int> phase{0};  // 1: reserved; 2: the normal thread has yielded since
    std::atomic<int> onReservedAfterYield{0};
    std::atomic<bool> stop{false};
    std::atomic<int> startedOn{-1};
    arbrt::ThreadId normal = arbrt::createThreadWith(withClass(ThreadClass::normal, 1), [&] {
        startedOn = arbrt::currentCore();
        while (!stop.load()) {
            const int core = arbrt::currentCore();
            if (phase.load() == 2 && core == 1) onReservedAfterYield.fetch_add(1);
            if (phase.load() == 1) phase = 2;  // this iteration's yield is the first since
            arbrt::yield();
        }
    });
    ASSERT_TRUE(eventually([&] { return startedOn.load() >= 0; }));
    ASSERT_EQ(startedOn.load(), 1);  // nothing else runnable: it never left core 1
    arbrt::Semaphore done;
    arbrt::ThreadId exclusive =
        arbrt::createThreadWith(withClass(ThreadClass::exclusive, 1), [&] { done.wait(); });
    ASSERT_EQ(arbrt::reservedCoreOf(exclusive), 1);
    phase = 1;
    ASSERT_TRUE(eventually([&] { return phase.load() == 2; }));
    // Let the normal thread loop a while after leaving (its iterations are counted above).
    for (int i = 0; i < 1000; ++i) arbrt_test::relax();
    stop = true;
    EXPECT_EQ(arbrt::join(normal), 0);
    done.post();
    EXPECT_EQ(arbrt::join(exclusive), 0);
    EXPECT_EQ(onReservedAfterYield.load(), 0);
}

TEST_F(Classes1, ExclusiveThread_FallsBackToNormalOnOneCore) {
    std::atomic<bool> ran{false};
    bool fellBack = false;
    arbrt::ThreadId t = spawnReporting(
        withClass(ThreadClass::exclusive),
        [](void* raw) -> void* {
            static_cast<std::atomic<bool>*>(raw)->store(true);
            return nullptr;
        },
        &ran, &fellBack);
    ASSERT_TRUE(t);
    EXPECT_TRUE(fellBack);
    EXPECT_EQ(arbrt::reservedCoreOf(t), -1);
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_TRUE(ran.load());
    EXPECT_EQ(arbrt::stats().exclusiveFallbacks, 1u);
    EXPECT_EQ(arbrt::stats().coresReserved, 0u);
}

TEST_F(Classes3, ExclusiveThread_OneCoreAlwaysStaysShared) {
    arbrt::Semaphore firstDone, secondDone;
    auto parkUntilDone = [](void* raw) -> void* {
        static_cast<arbrt::Semaphore*>(raw)->wait();
        return nullptr;
    };
    bool fellBack[3] = {true, true, false};
    arbrt::ThreadId first =
        spawnReporting(withClass(ThreadClass::exclusive), parkUntilDone, &firstDone, &fellBack[0]);
    arbrt::ThreadId second =
        spawnReporting(withClass(ThreadClass::exclusive), parkUntilDone, &secondDone, &fellBack[1]);
    // The third would take the last shared core: it runs as normal, and tries again at its
    // switches (so it yields until it has a core of its own).
    std::atomic<int> gotCore{-1};
    arbrt::ThreadId third = spawnReporting(
        withClass(ThreadClass::exclusive),
        [](void* raw) -> void* {
            auto* got = static_cast<std::atomic<int>*>(raw);
            while (arbrt::reservedCoreOf(arbrt::self()) < 0) arbrt::yield();
            got->store(arbrt::currentCore());
            return nullptr;
        },
        &gotCore, &fellBack[2]);
    EXPECT_FALSE(fellBack[0]);
    EXPECT_FALSE(fellBack[1]);
    EXPECT_TRUE(fellBack[2]);
    const int a = arbrt::reservedCoreOf(first), b = arbrt::reservedCoreOf(second);
    EXPECT_GE(a, 0);
    EXPECT_GE(b, 0);
    EXPECT_NE(a, b);
    EXPECT_EQ(arbrt::stats().exclusiveFallbacks, 1u);
    EXPECT_EQ(gotCore.load(), -1);
    // The first exits: its core is shared again and the third reserves a core at a switch.
    firstDone.post();
    EXPECT_EQ(arbrt::join(first), 0);
    ASSERT_TRUE(eventually([&] { return gotCore.load() >= 0; }));
    EXPECT_NE(gotCore.load(), b);
    EXPECT_EQ(arbrt::join(third), 0);
    secondDone.post();
    EXPECT_EQ(arbrt::join(second), 0);
    EXPECT_EQ(arbrt::stats().coresReserved, 3u);
}

TEST_F(Classes3, ReleaseCore_ReservedCoreEndsReservationAndThreadReservesAnother) {
    std::atomic<bool> stop{false};
    arbrt::ThreadId exclusive = arbrt::createThreadWith(withClass(ThreadClass::exclusive, 2), [&] {
        while (!stop.load()) arbrt::yield();
    });
    ASSERT_EQ(arbrt::reservedCoreOf(exclusive), 2);
    EXPECT_EQ(arbrt::releaseCore(2), 0);
    // It lost core 2 (a fallback) and reserves one of the others at a later switch.
    ASSERT_TRUE(eventually([&] {
        const int core = arbrt::reservedCoreOf(exclusive);
        return core == 0 || core == 1;
    }));
    EXPECT_EQ(arbrt::stats().exclusiveFallbacks, 1u);
    EXPECT_EQ(arbrt::stats().coresReserved, 2u);
    stop = true;
    EXPECT_EQ(arbrt::join(exclusive), 0);
    EXPECT_EQ(arbrt::acquireCore(2), 0);
}

TEST_F(Classes2, ReleaseCore_LastSharedCoreEndsAReservation) {
    std::atomic<bool> stop{false};
    arbrt::ThreadId exclusive = arbrt::createThreadWith(withClass(ThreadClass::exclusive, 1), [&] {
        while (!stop.load()) arbrt::yield();
    });
    ASSERT_EQ(arbrt::reservedCoreOf(exclusive), 1);
    // Core 0 is the last shared core: releasing it ends the reservation of core 1, so normal
    // threads still have a core.
    EXPECT_EQ(arbrt::releaseCore(0), 0);
    EXPECT_EQ(arbrt::reservedCoreOf(exclusive), -1);
    std::atomic<int> ranOn{-1};
    arbrt::ThreadId normal = arbrt::createThread([&] { ranOn = arbrt::currentCore(); });
    EXPECT_EQ(arbrt::join(normal), 0);
    EXPECT_EQ(ranOn.load(), 1);
    // Core 0 back: the exclusive thread reserves a core again at a switch.
    EXPECT_EQ(arbrt::acquireCore(0), 0);
    ASSERT_TRUE(eventually([&] { return arbrt::reservedCoreOf(exclusive) >= 0; }));
    stop = true;
    EXPECT_EQ(arbrt::join(exclusive), 0);
}

// --- Reclassification.

TEST_F(Classes3, SetThreadClass_TakesEffectAtTheNextSwitch) {
    std::atomic<bool> stop{false};
    std::atomic<int> movedWhileReserved{0};
    arbrt::ThreadId t = arbrt::createThread([&] {
        while (!stop.load()) {
            const int reserved = arbrt::reservedCoreOf(arbrt::self());
            if (reserved >= 0 && reserved != arbrt::currentCore()) movedWhileReserved.fetch_add(1);
            arbrt::yield();
        }
    });
    EXPECT_EQ(arbrt::reservedCoreOf(t), -1);
    ASSERT_EQ(arbrt::setThreadClass(t, ThreadClass::exclusive), 0);
    ASSERT_TRUE(eventually([&] { return arbrt::reservedCoreOf(t) >= 0; }));
    ASSERT_EQ(arbrt::setThreadClass(t, ThreadClass::batch), 0);
    ASSERT_TRUE(eventually([&] { return arbrt::reservedCoreOf(t) == -1; }));
    ASSERT_EQ(arbrt::setThreadClass(t, ThreadClass::exclusive), 0);
    ASSERT_TRUE(eventually([&] { return arbrt::reservedCoreOf(t) >= 0; }));
    ASSERT_EQ(arbrt::setThreadClass(t, ThreadClass::normal), 0);
    ASSERT_TRUE(eventually([&] { return arbrt::reservedCoreOf(t) == -1; }));
    stop = true;
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(movedWhileReserved.load(), 0);
    EXPECT_EQ(arbrt::stats().coresReserved, 2u);
    EXPECT_EQ(arbrt::setThreadClass(t, ThreadClass::batch), ESRCH);
}

TEST_F(Classes1, SetThreadClass_UnknownClassIsInvalid) {
    arbrt::Semaphore done;
    arbrt::ThreadId t = arbrt::createThread([&] { done.wait(); });
    EXPECT_EQ(arbrt::setThreadClass(t, ThreadClass(7)), EINVAL);
    done.post();
    EXPECT_EQ(arbrt::join(t), 0);
    int err = 0;
    EXPECT_FALSE(arbrt::spawn(
        withClass(ThreadClass(3)), [](void*) -> void* { return nullptr; }, nullptr, &err));
    EXPECT_EQ(err, EINVAL);
}

// --- Batch.

TEST_F(Classes1, BatchThread_RunsOnlyWhenNoNormalThreadWaitsOnItsCore) {
    // One core: the driver creates a batch thread and then a normal one, so a plain FIFO would run
    // the batch thread first.
    std::atomic<int> order{0};
    std::atomic<int> batchAt{0}, normalAt{0};
    bool batchRanWhileDriverRunnable = true;
    arbrt::ThreadId driver = arbrt::createThreadWith(arbrt_test::pinnedTo(0), [&] {
        arbrt::ThreadAttributes batch = arbrt_test::pinnedTo(0);
        batch.threadClass = ThreadClass::batch;
        arbrt::ThreadId b = arbrt::createThreadWith(batch, [&] { batchAt = ++order; });
        arbrt::ThreadId n =
            arbrt::createThreadWith(arbrt_test::pinnedTo(0), [&] { normalAt = ++order; });
        // The yield runs the normal thread (FIFO among normal threads); the driver, normal and
        // runnable, gets the core back before the batch thread, and keeps it while it yields.
        for (int i = 0; i < 100; ++i) arbrt::yield();
        batchRanWhileDriverRunnable = batchAt.load() != 0;
        // Blocked, the driver leaves the core to the batch thread.
        arbrt::join(n);
        arbrt::join(b);
    });
    EXPECT_EQ(arbrt::join(driver), 0);
    EXPECT_FALSE(batchRanWhileDriverRunnable);
    EXPECT_EQ(normalAt.load(), 1);
    EXPECT_EQ(batchAt.load(), 2);
}

TEST_F(Classes1, BatchThread_ProgressesWhenTheCoreIsOtherwiseIdle) {
    arbrt::Semaphore normalWaits;
    std::atomic<bool> normalDone{false};
    arbrt::ThreadId normal = arbrt::createThread([&] {
        normalWaits.wait();  // parked: not runnable
        normalDone = true;
    });
    std::atomic<int> steps{0};
    arbrt::ThreadId batch = arbrt::createThreadWith(withClass(ThreadClass::batch), [&] {
        for (int i = 0; i < 1000; ++i) {
            steps.fetch_add(1);
            arbrt::yield();
        }
        normalWaits.post();
    });
    EXPECT_EQ(arbrt::join(batch), 0);
    EXPECT_EQ(steps.load(), 1000);
    EXPECT_EQ(arbrt::join(normal), 0);
    EXPECT_TRUE(normalDone.load());
}

TEST_F(Classes1, BatchThreads_ShareTheCoreRoundRobin) {
    // Two batch threads yielding on an otherwise idle core take turns. A driver on the same core
    // creates both before either runs (single-core FIFO argument), then waits.
    std::atomic<int> turn{0};
    std::atomic<int> outOfTurn{0};
    auto body = [&](int me) {
        for (int i = 0; i < 100; ++i) {
            if (i > 0 && turn.load() != me) outOfTurn.fetch_add(1);
            turn = 1 - me;
            arbrt::yield();
        }
    };
    arbrt::ThreadId driver = arbrt::createThreadWith(arbrt_test::pinnedTo(0), [&] {
        arbrt::ThreadAttributes batch = arbrt_test::pinnedTo(0);
        batch.threadClass = ThreadClass::batch;
        arbrt::ThreadId a = arbrt::createThreadWith(batch, body, 0);
        arbrt::ThreadId b = arbrt::createThreadWith(batch, body, 1);
        arbrt::join(a);
        arbrt::join(b);
    });
    EXPECT_EQ(arbrt::join(driver), 0);
    EXPECT_EQ(outOfTurn.load(), 0);
}

TEST_F(Classes2, Steal_TakesNormalThreadsBeforeBatchThreads) {
    std::atomic<bool> release0{false}, release1{false};
    std::atomic<int> running{0};
    // Both cores' runners compute without switching: nothing queued can run until one stops.
    arbrt::ThreadId spin0 = arbrt::createThreadWith(arbrt_test::pinnedTo(0), [&] {
        running.fetch_add(1);
        computeUntil(release0);
    });
    arbrt::ThreadId spin1 = arbrt::createThreadWith(arbrt_test::pinnedTo(1), [&] {
        running.fetch_add(1);
        computeUntil(release1);
    });
    ASSERT_TRUE(eventually([&] { return running.load() == 2; }));
    // Queued on core 0, the batch thread first (older), then the normal one; both may run on
    // either core.
    std::atomic<int> order{0};
    std::atomic<int> batchAt{0}, normalAt{0};
    arbrt::ThreadId batch =
        arbrt::createThreadWith(withClass(ThreadClass::batch, 0), [&] { batchAt = ++order; });
    arbrt::ThreadId normal =
        arbrt::createThreadWith(withClass(ThreadClass::normal, 0), [&] { normalAt = ++order; });
    // Core 1 goes idle and steals from core 0: the normal thread first, though it is younger.
    release1 = true;
    ASSERT_TRUE(eventually([&] { return order.load() == 2; }));
    release0 = true;
    for (arbrt::ThreadId t : {spin0, spin1, batch, normal}) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(normalAt.load(), 1);
    EXPECT_EQ(batchAt.load(), 2);
}

}  // namespace
