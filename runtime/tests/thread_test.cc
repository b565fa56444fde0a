// The thread API: create/spawn/join/detach/exit/self/yield/tryJoin/joinUntil, their error codes,
// placement (createThreadOn, ThreadAttributes::allowed) and stack sizes.
#include <alloca.h>

#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

using arbrt_test::eventually;
using arbrt_test::kMicrosecond;
using arbrt_test::kMillisecond;
using arbrt_test::kSecond;
using arbrt_test::pinnedTo;

class Thread : public arbrt_test::RuntimeTest<4> {};

// A C entry point for spawn(): hands back its argument advanced by one byte.
void* plusOne(void* arg) {
    return static_cast<char*>(arg) + 1;
}

// Ends the calling thread from `depth` frames down, so exit() is shown to leave nested calls.
void exitFromNested(int depth, void* result) {
    if (depth > 0) {
        exitFromNested(depth - 1, result);
    } else {
        arbrt::exit(result);
    }
}

// Touches `bytes` of the calling thread's stack (every 512 bytes) and reads them back; returns true
// if the memory held what was written.
__attribute__((noinline)) bool useStack(size_t bytes) {
    auto* buffer = static_cast<volatile char*>(alloca(bytes));
    for (size_t i = 0; i < bytes; i += 512) buffer[i] = char(i >> 9);
    for (size_t i = 0; i < bytes; i += 512) {
        if (buffer[i] != char(i >> 9)) return false;
    }
    return true;
}

TEST_F(Thread, Spawn_ResultPassedThroughJoin) {
    char buffer[4];
    const arbrt::ThreadId t = arbrt::spawn({}, plusOne, buffer);
    ASSERT_TRUE(t);
    void* result = nullptr;
    EXPECT_EQ(arbrt::join(t, &result), 0);
    EXPECT_EQ(result, buffer + 1);
}

TEST_F(Thread, Spawn_BadAttributesAreEinval) {
    arbrt::ThreadAttributes attributes;
    int err = 0;
    attributes.core = 4;  // == numCores
    EXPECT_FALSE(arbrt::spawn(attributes, plusOne, nullptr, &err));
    EXPECT_EQ(err, EINVAL);
    attributes.core = -2;
    err = 0;
    EXPECT_FALSE(arbrt::spawn(attributes, plusOne, nullptr, &err));
    EXPECT_EQ(err, EINVAL);
    attributes.core = -1;
    attributes.allowed = arbrt_test::coreSet({200});  // no core of this runtime
    err = 0;
    EXPECT_FALSE(arbrt::spawn(attributes, plusOne, nullptr, &err));
    EXPECT_EQ(err, EINVAL);
    EXPECT_FALSE(arbrt::createThreadWith(attributes, [] {}));
    EXPECT_EQ(arbrt::stats().liveThreads, 0u);
}

TEST_F(Thread, Spawn_UnmappableStackIsEagain) {
    arbrt::ThreadAttributes attributes;
    attributes.stackSize = size_t(1) << 62;  // more than the address space
    int err = 0;
    EXPECT_FALSE(arbrt::spawn(attributes, plusOne, nullptr, &err));
    EXPECT_EQ(err, EAGAIN);
    EXPECT_EQ(arbrt::stats().liveThreads, 0u);
    const arbrt::ThreadId t = arbrt::spawn({}, plusOne, nullptr, &err);  // still works
    EXPECT_EQ(arbrt::join(t), 0);
}

TEST_F(Thread, Create_CallableGetsCopiesOfArguments) {
    std::string seen;
    int sum = 0;
    std::string text = "hello";
    const arbrt::ThreadId t = arbrt::createThread(
        [&](std::string s, int a, std::unique_ptr<int> p) {
            seen = s;
            sum = a + *p;
        },
        text, 5, std::make_unique<int>(7));
    text = "changed";  // the thread holds its own copy
    ASSERT_TRUE(t);
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(seen, "hello");
    EXPECT_EQ(sum, 12);
}

TEST_F(Thread, Exit_ResultPassedThroughJoin) {
    int marker = 0;
    std::atomic<bool> afterExit{false};
    const arbrt::ThreadId t = arbrt::createThread([&] {
        exitFromNested(5, &marker);
        afterExit = true;
    });
    void* result = nullptr;
    EXPECT_EQ(arbrt::join(t, &result), 0);
    EXPECT_EQ(result, &marker);
    EXPECT_FALSE(afterExit.load());
}

TEST_F(Thread, Exit_OnKernelThreadReturns) {
    arbrt::exit(nullptr);
    SUCCEED();
}

TEST_F(Thread, Self_NullOnKernelThread) {
    EXPECT_FALSE(arbrt::self());
    EXPECT_EQ(arbrt::currentCore(), -1);
}

TEST_F(Thread, Self_EqualsHandleFromCreate) {
    arbrt::ThreadId inside;
    const arbrt::ThreadId t = arbrt::createThread([&] { inside = arbrt::self(); });
    ASSERT_EQ(arbrt::join(t), 0);
    EXPECT_TRUE(inside);
    EXPECT_EQ(inside, t);
}

TEST_F(Thread, Yield_OnKernelThreadReturns) {
    arbrt::yield();
    SUCCEED();
}

TEST_F(Thread, Yield_AlternatesThreadsOnOneCore) {
    std::vector<int> log;  // touched only by threads pinned to core 1: never concurrently
    const arbrt::ThreadId driver = arbrt::createThreadWith(pinnedTo(1), [&] {
        auto body = [&](int who) {
            for (int i = 0; i < 5; ++i) {
                log.push_back(who);
                arbrt::yield();
            }
        };
        const arbrt::ThreadId a = arbrt::createThreadWith(pinnedTo(1), body, 0);
        const arbrt::ThreadId b = arbrt::createThreadWith(pinnedTo(1), body, 1);
        arbrt::join(a);
        arbrt::join(b);
    });
    ASSERT_EQ(arbrt::join(driver), 0);
    ASSERT_EQ(log.size(), 10u);
    for (size_t i = 1; i < log.size(); ++i) EXPECT_NE(log[i], log[i - 1]) << "at " << i;
}

// A thread created or woken by a thread on its own core (the core's runNext slot) must get its turn
// even while the other threads there only yield (a spin-with-yield loop must not starve it).
TEST_F(Thread, Yield_GivesCreatedAndWokenThreadsATurn) {
    std::atomic<int> started{0};
    std::atomic<bool> giveUp{false};
    bool createdRan = false, wokenRan = false;
    const arbrt::ThreadId driver = arbrt::createThreadWith(pinnedTo(1), [&] {
        auto spinner = [&] {
            started.fetch_add(1);
            while (started.load() < 2 && !giveUp.load()) arbrt::yield();
        };
        const arbrt::ThreadId x = arbrt::createThreadWith(pinnedTo(1), spinner);
        const arbrt::ThreadId y = arbrt::createThreadWith(pinnedTo(1), spinner);
        createdRan = eventually([&] { return started.load() >= 2; });
        giveUp = true;
        arbrt::join(x);
        arbrt::join(y);
        // The same with a woken thread: W parks; D wakes it while D and S spin with yield.
        std::atomic<int> stage{0};
        giveUp = false;
        const arbrt::ThreadId w = arbrt::createThreadWith(pinnedTo(1), [&] {
            stage = 1;
            while (stage.load() == 1) arbrt::block();
        });
        const arbrt::ThreadId s = arbrt::createThreadWith(pinnedTo(1), [&] {
            while (stage.load() != 3 && !giveUp.load()) arbrt::yield();
        });
        while (stage.load() != 1) arbrt::yield();
        stage = 2;
        arbrt::signal(w);  // W goes to runNext; D and S keep yielding
        wokenRan = eventually([&] { return arbrt::tryJoin(w) == 0; });
        giveUp = true;
        stage = 3;
        arbrt::signal(w);
        if (!wokenRan) arbrt::join(w);
        arbrt::join(s);
    });
    ASSERT_EQ(arbrt::join(driver), 0);
    EXPECT_TRUE(createdRan) << "a newly created thread never ran while others yielded";
    EXPECT_TRUE(wokenRan) << "a woken thread never ran while others yielded";
}

TEST_F(Thread, Join_NullHandleIsEsrch) {
    EXPECT_EQ(arbrt::join(arbrt::ThreadId{}), ESRCH);
    EXPECT_EQ(arbrt::tryJoin(arbrt::ThreadId{}), ESRCH);
    EXPECT_EQ(arbrt::joinUntil(arbrt::ThreadId{}, arbrt::nowNs() + kSecond), ESRCH);
    EXPECT_EQ(arbrt::detach(arbrt::ThreadId{}), ESRCH);
}

TEST_F(Thread, Join_AfterJoinIsEsrch) {
    const arbrt::ThreadId t = arbrt::createThread([] {});
    ASSERT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(arbrt::join(t), ESRCH);
    EXPECT_EQ(arbrt::tryJoin(t), ESRCH);
    EXPECT_EQ(arbrt::joinUntil(t, arbrt::nowNs() + kSecond), ESRCH);
    EXPECT_EQ(arbrt::detach(t), ESRCH);
}

TEST_F(Thread, Join_SecondConcurrentJoinerIsEinval) {
    arbrt::Semaphore release;
    const arbrt::ThreadId target = arbrt::createThread([&] { release.wait(); });
    std::atomic<int> firstJoin{-1};
    const arbrt::ThreadId joiner = arbrt::createThread([&] { firstJoin = arbrt::join(target); });
    // tryJoin says EBUSY while the target is merely running, EINVAL once the joiner is registered.
    ASSERT_TRUE(eventually([&] {
        const int rc = arbrt::tryJoin(target);
        EXPECT_TRUE(rc == EBUSY || rc == EINVAL) << rc;
        return rc == EINVAL;
    }));
    EXPECT_EQ(arbrt::join(target), EINVAL);
    EXPECT_EQ(arbrt::joinUntil(target, arbrt::nowNs() + kSecond), EINVAL);
    release.post();
    EXPECT_EQ(arbrt::join(joiner), 0);
    EXPECT_EQ(firstJoin.load(), 0);
    EXPECT_EQ(arbrt::join(target), ESRCH);
}

TEST_F(Thread, Join_DetachedThreadIsEinval) {
    arbrt::Semaphore release;
    const arbrt::ThreadId t = arbrt::createThread([&] { release.wait(); });
    EXPECT_EQ(arbrt::detach(t), 0);
    EXPECT_EQ(arbrt::join(t), EINVAL);
    EXPECT_EQ(arbrt::tryJoin(t), EINVAL);
    EXPECT_EQ(arbrt::joinUntil(t, arbrt::nowNs() + kSecond), EINVAL);
    EXPECT_EQ(arbrt::detach(t), EINVAL);
    release.post();
    // Once it has exited it has freed itself: the handle is stale.
    EXPECT_TRUE(eventually([&] { return arbrt::join(t) == ESRCH; }));
    EXPECT_TRUE(eventually([] { return arbrt::stats().liveThreads == 0; }));
}

TEST_F(Thread, Join_DetachedAttributeIsEinvalOrEsrch) {
    arbrt::ThreadAttributes attributes;
    attributes.detached = true;
    std::atomic<bool> ran{false};
    const arbrt::ThreadId t = arbrt::createThreadWith(attributes, [&] { ran = true; });
    ASSERT_TRUE(t);
    const int rc = arbrt::join(t);  // EINVAL while it runs, ESRCH once it freed itself
    EXPECT_TRUE(rc == EINVAL || rc == ESRCH) << rc;
    EXPECT_TRUE(eventually([&] { return arbrt::join(t) == ESRCH; }));
    EXPECT_TRUE(ran.load());
}

TEST_F(Thread, Join_SelfIsEdeadlk) {
    std::atomic<int> rc{-1};
    const arbrt::ThreadId t = arbrt::createThread([&] { rc = arbrt::join(arbrt::self()); });
    ASSERT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(rc.load(), EDEADLK);
}

TEST_F(Thread, Join_FromUserThreadWaitsForResult) {
    arbrt::Semaphore release;
    const arbrt::ThreadId target = arbrt::spawn(
        {},
        [](void* arg) -> void* {
            static_cast<arbrt::Semaphore*>(arg)->wait();
            return arg;
        },
        &release);
    void* result = nullptr;
    std::atomic<int> rc{-1};
    const arbrt::ThreadId joiner = arbrt::createThread([&] { rc = arbrt::join(target, &result); });
    EXPECT_EQ(arbrt::tryJoin(joiner), EBUSY);  // it cannot finish before the target
    release.post();
    ASSERT_EQ(arbrt::join(joiner), 0);
    EXPECT_EQ(rc.load(), 0);
    EXPECT_EQ(result, &release);
}

TEST_F(Thread, Detach_TwiceIsEinval) {
    arbrt::Semaphore release;
    const arbrt::ThreadId t = arbrt::createThread([&] { release.wait(); });
    EXPECT_EQ(arbrt::detach(t), 0);
    EXPECT_EQ(arbrt::detach(t), EINVAL);
    release.post();
    EXPECT_TRUE(eventually([&] { return arbrt::detach(t) == ESRCH; }));
}

TEST_F(Thread, Detach_AfterExitFreesThread) {
    std::atomic<bool> done{false};
    const arbrt::ThreadId t = arbrt::createThread([&] { done = true; });
    ASSERT_TRUE(eventually([&] { return done.load(); }));
    EXPECT_EQ(arbrt::detach(t), 0);  // exited or about to: either way it is now freed at exit
    EXPECT_TRUE(eventually([&] { return arbrt::join(t) == ESRCH; }));
    EXPECT_TRUE(eventually([] { return arbrt::stats().liveThreads == 0; }));
}

TEST_F(Thread, Detached_ThreadsFreeThemselves) {
    constexpr int kThreads = 2'000;
    const uint64_t createdBefore = arbrt::stats().threadsCreated;  // the fixture's
    arbrt::ThreadAttributes attributes;
    attributes.detached = true;
    std::atomic<int> done{0};
    for (int i = 0; i < kThreads; ++i) {
        ASSERT_TRUE(arbrt::createThreadWith(attributes, [&] {
            arbrt::yield();
            done.fetch_add(1);
        }));
    }
    ASSERT_TRUE(eventually([&] { return done.load() == kThreads; }));
    EXPECT_TRUE(eventually([] { return arbrt::stats().liveThreads == 0; }));
    EXPECT_EQ(arbrt::stats().threadsCreated - createdBefore, uint64_t(kThreads));
}

TEST_F(Thread, TryJoin_RunningThreadIsEbusy) {
    arbrt::Semaphore release;
    const arbrt::ThreadId t = arbrt::spawn(
        {},
        [](void* arg) -> void* {
            static_cast<arbrt::Semaphore*>(arg)->wait();
            return arg;
        },
        &release);
    EXPECT_EQ(arbrt::tryJoin(t), EBUSY);
    EXPECT_EQ(arbrt::tryJoin(t), EBUSY);  // a failed tryJoin leaves it joinable
    release.post();
    void* result = nullptr;
    EXPECT_TRUE(eventually([&] {
        const int rc = arbrt::tryJoin(t, &result);
        EXPECT_TRUE(rc == 0 || rc == EBUSY) << rc;
        return rc == 0;
    }));
    EXPECT_EQ(result, &release);
    EXPECT_EQ(arbrt::tryJoin(t), ESRCH);
}

// Checks joinUntil's time-out and success on the calling thread (kernel or user thread).
void checkJoinUntil() {
    arbrt::Semaphore release;
    const arbrt::ThreadId t = arbrt::spawn(
        {},
        [](void* arg) -> void* {
            static_cast<arbrt::Semaphore*>(arg)->wait();
            return arg;
        },
        &release);
    const uint64_t deadline = arbrt::nowNs() + 2 * kMillisecond;
    EXPECT_EQ(arbrt::joinUntil(t, deadline), ETIMEDOUT);
    EXPECT_GE(arbrt::nowNs(), deadline);
    EXPECT_EQ(arbrt::joinUntil(t, arbrt::nowNs() - 1), ETIMEDOUT);  // already passed
    EXPECT_EQ(arbrt::tryJoin(t), EBUSY);                            // still joinable
    release.post();
    void* result = nullptr;
    EXPECT_EQ(arbrt::joinUntil(t, arbrt::nowNs() + 30 * kSecond, &result), 0);
    EXPECT_EQ(result, &release);
}

TEST_F(Thread, JoinUntil_TimesOutWhileThreadRuns) {
    checkJoinUntil();
}

TEST_F(Thread, JoinUntil_FromUserThreadTimesOut) {
    const arbrt::ThreadId t = arbrt::createThread(checkJoinUntil);
    EXPECT_EQ(arbrt::join(t), 0);
}

TEST_F(Thread, JoinUntil_RacesWithExit) {
    // Deadlines right around the target's exit: every round ends joined exactly once.
    constexpr int kRounds = 2'000;
    int timedOut = 0;
    for (int i = 0; i < kRounds; ++i) {
        const arbrt::ThreadId t = arbrt::createThread([] { arbrt_test::burn(200); });
        const int rc = arbrt::joinUntil(t, arbrt::nowNs() + uint64_t(i % 20) * kMicrosecond);
        ASSERT_TRUE(rc == 0 || rc == ETIMEDOUT) << rc;
        if (rc == ETIMEDOUT) {
            ++timedOut;
            ASSERT_EQ(arbrt::join(t), 0);
        }
        ASSERT_EQ(arbrt::join(t), ESRCH);
    }
    RecordProperty("timedOut", timedOut);
    EXPECT_EQ(arbrt::stats().liveThreads, 0u);
}

TEST_F(Thread, CreateOn_RunsOnRequestedCore) {
    for (int core = 0; core < 4; ++core) {
        arbrt_test::CoreOccupier others(arbrt_test::allCoresBut(core));  // nobody idle to steal
        ASSERT_TRUE(others.ready());
        std::atomic<int> observed{-2};
        const arbrt::ThreadId t =
            arbrt::createThreadOn(core, [&] { observed = arbrt::currentCore(); });
        ASSERT_EQ(arbrt::join(t), 0);
        EXPECT_EQ(observed.load(), core);
    }
}

TEST_F(Thread, CreateOn_FromUserThreadOnAnotherCore) {
    // Core 0 runs the creator beside a spinner (so it never idles and steals), core 3 is free.
    arbrt_test::CoreOccupier others({0, 1, 2});
    ASSERT_TRUE(others.ready());
    std::atomic<int> creatorCore{-2}, observed{-2};
    const arbrt::ThreadId creator = arbrt::createThreadWith(pinnedTo(0), [&] {
        creatorCore = arbrt::currentCore();
        const arbrt::ThreadId t =
            arbrt::createThreadOn(3, [&] { observed = arbrt::currentCore(); });
        eventually([&] { return observed.load() != -2; });  // spins: core 0 stays busy
        arbrt::join(t);
    });
    ASSERT_EQ(arbrt::join(creator), 0);
    EXPECT_EQ(creatorCore.load(), 0);
    EXPECT_EQ(observed.load(), 3);
}

TEST_F(Thread, Allowed_ThreadRunsOnlyOnItsCore) {
    // Pinned threads for cores 1..3 switch in every way a thread can while unpinned threads keep
    // the cores busy and idle ones stealing; the pinned ones must never see another core.
    constexpr int kRounds = 200;
    arbrt::Mutex mutex;
    arbrt::Semaphore tokens;
    long shared = 0;
    std::atomic<bool> stop{false};
    std::atomic<int> wrongCore{0};
    std::vector<arbrt::ThreadId> pinned, others;
    for (int i = 0; i < 16; ++i) {
        others.push_back(arbrt::createThread([&] {
            while (!stop.load(std::memory_order_relaxed)) {
                mutex.lock();
                ++shared;
                arbrt::yield();  // hold the lock across a switch: pinned threads block on it
                mutex.unlock();
                tokens.post();
                arbrt::yield();
            }
        }));
    }
    for (int core = 1; core < 4; ++core) {
        arbrt::ThreadAttributes attributes;
        attributes.allowed = arbrt_test::coreSet({core});  // placed by the runtime, not by core
        pinned.push_back(arbrt::createThreadWith(attributes, [&, core] {
            auto check = [&] {
                if (arbrt::currentCore() != core) wrongCore.fetch_add(1);
            };
            check();
            for (int r = 0; r < kRounds; ++r) {
                arbrt::yield();
                check();
                arbrt::sleepFor(uint64_t(r % 3) * kMicrosecond);
                check();
                mutex.lock();
                check();
                ++shared;
                mutex.unlock();
                check();
                tokens.wait();
                check();
            }
        }));
    }
    for (arbrt::ThreadId t : pinned) EXPECT_EQ(arbrt::join(t), 0);
    stop = true;
    for (arbrt::ThreadId t : others) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(wrongCore.load(), 0);
}

TEST_F(Thread, StackSize_ThreadCanUseMostOfOneMiB) {
    arbrt::ThreadAttributes attributes;
    attributes.stackSize = 1 << 20;
    std::atomic<bool> ok{false};
    const arbrt::ThreadId t =
        arbrt::createThreadWith(attributes, [&] { ok = useStack(960 * 1024); });
    ASSERT_TRUE(t);
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_TRUE(ok.load());
}

TEST_F(Thread, StackSize_DefaultIsEightMiB) {
    std::atomic<bool> ok{false};
    const arbrt::ThreadId t = arbrt::createThread([&] { ok = useStack(7 << 20); });
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_TRUE(ok.load());
}

TEST_F(Thread, StackSize_SmallAndLargeStacksMix) {
    // Pooled stacks of one size must not be handed to a thread that asked for another.
    std::vector<arbrt::ThreadId> threads;
    std::atomic<int> ok{0};
    for (int i = 0; i < 64; ++i) {
        arbrt::ThreadAttributes attributes;
        const bool big = i % 2 == 0;
        attributes.stackSize = big ? 2u << 20 : 64u << 10;
        threads.push_back(arbrt::createThreadWith(attributes, [&, big] {
            if (useStack(big ? 1900 * 1024 : 40 * 1024)) ok.fetch_add(1);
        }));
        if (i % 8 == 7) {
            for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
            threads.clear();
        }
    }
    EXPECT_EQ(ok.load(), 64);
}

}  // namespace
