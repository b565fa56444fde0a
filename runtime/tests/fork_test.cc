// fork() with the runtime running: the child rebuilds it around the forking thread
// (arbrt/embed/fork.h). Each child reports through its exit status; the parent checks it with
// waitpid.
#include <sys/wait.h>
#include <unistd.h>

#include <arbrt/embed/fork.h>
#include <arbrt/parking_lot.h>

#include <atomic>
#include <cerrno>

#include "test_util.h"

namespace {

using arbrt_test::exitStatusOf;
using arbrt_test::forkWithRuntime;

using ForkTest = arbrt_test::RuntimeTest<2>;

// Runs in the child: threads, a contended mutex, a sleep, joins; returns an exit status.
int exerciseChild(arbrt::ThreadId parentThread) {
    if (!arbrt::isRunning() || !arbrt::self()) return 10;
    if (arbrt::numCores() != 1) return 11;
    // A thread of the parent does not exist here: its handle is stale.
    if (arbrt::join(parentThread) != ESRCH) return 12;
    arbrt::Mutex mutex;
    long counter = 0;
    arbrt::ThreadId threads[8];
    for (auto& t : threads) {
        t = arbrt::createThread([&] {
            for (int i = 0; i < 1000; ++i) {
                mutex.lock();
                ++counter;
                mutex.unlock();
                if (i % 100 == 0) arbrt::yield();
            }
        });
        if (!t) return 13;
    }
    for (auto& t : threads) {
        if (arbrt::join(t) != 0) return 14;
    }
    if (counter != 8000) return 15;
    const uint64_t before = arbrt::nowNs();
    arbrt::sleepFor(arbrt_test::kMillisecond);
    if (arbrt::nowNs() - before < arbrt_test::kMillisecond) return 16;
    return 0;
}

TEST_F(ForkTest, ChildAfterFork_UserThreadContinuesOnNewRuntime) {
    // A parent thread parked for the whole test: the child must never run it.
    arbrt::Semaphore parked;
    arbrt::ThreadId sleeper = arbrt::createThread([&] { parked.wait(); });
    ASSERT_TRUE(sleeper);
    int status = -1;
    arbrt::ThreadId forker = arbrt::createThread([&] {
        const pid_t pid = forkWithRuntime(1);
        if (pid == 0) _exit(exerciseChild(sleeper));
        status = exitStatusOf(pid);
    });
    ASSERT_TRUE(forker);
    ASSERT_EQ(arbrt::join(forker), 0);
    EXPECT_EQ(status, 0);
    parked.post();
    ASSERT_EQ(arbrt::join(sleeper), 0);
}

TEST_F(ForkTest, ChildAfterFork_ParkingLotHoldsNoneOfTheParentsWaiters) {
    // A parent thread parked on `word` for the whole test: in the child its bucket must be empty
    // (the child resets the buckets the parent used, and only those), and the address must work.
    std::atomic<int> word{0};
    arbrt::ThreadId parker = arbrt::createThread([&] {
        arbrt::park(
            &word, [&] { return word.load() == 0; }, arbrt::kNoDeadline);
    });
    ASSERT_TRUE(parker);
    ASSERT_TRUE(arbrt_test::eventually([&] { return arbrt::parkedCount(&word) == 1; }));
    int status = -1;
    arbrt::ThreadId forker = arbrt::createThread([&] {
        const pid_t pid = forkWithRuntime(1);
        if (pid == 0) {
            if (arbrt::parkedCount(&word) != 0) _exit(30);
            if (arbrt::unpark(&word, 1) != 0) _exit(31);  // nobody to wake: no phantom thread
            // A child thread parks on the same address and is woken there.
            arbrt::ThreadId child = arbrt::createThread([&] {
                arbrt::park(
                    &word, [&] { return word.load() == 0; }, arbrt::kNoDeadline);
            });
            if (!child) _exit(32);
            if (!arbrt_test::eventually([&] { return arbrt::parkedCount(&word) == 1; })) _exit(33);
            word.store(1);
            if (arbrt::unpark(&word, 1) != 1 || arbrt::join(child) != 0) _exit(34);
            _exit(0);
        }
        status = exitStatusOf(pid);
    });
    ASSERT_TRUE(forker);
    ASSERT_EQ(arbrt::join(forker), 0);
    EXPECT_EQ(status, 0);
    EXPECT_EQ(arbrt::parkedCount(&word), 1u);  // the parent's waiter is still there
    word.store(1);
    EXPECT_EQ(arbrt::unpark(&word, 1), 1u);
    ASSERT_EQ(arbrt::join(parker), 0);
}

TEST_F(ForkTest, ChildAfterFork_KernelThreadCreatesUserThreads) {
    const pid_t pid = forkWithRuntime(2);
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        if (arbrt::self() || arbrt::numCores() != 2) _exit(20);
        int value = 0;
        arbrt::ThreadId t = arbrt::createThread([&] { value = 42; });
        if (!t || arbrt::join(t) != 0 || value != 42) _exit(21);
        _exit(0);
    }
    EXPECT_EQ(exitStatusOf(pid), 0);
}

}  // namespace
