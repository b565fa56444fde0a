// runOnKernelThreadTcb (arbrt/embed/host.h): on a user thread the function runs as the carrier's
// kernel thread (glibc's THREAD_SELF, errno and __thread variables are the carrier's) and the user
// thread's own are back afterwards, also when it runs in a signal handler that interrupted a user
// thread computing on its carrier; elsewhere it is a plain call.
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "arbrt/embed/host.h"
#include "test_util.h"

namespace {

using arbrt_test::eventually;
using arbrt_test::pinnedTo;

class KernelThreadTcb : public arbrt_test::RuntimeTest<2> {};

__thread int gValue = 5;

// What a function saw while it ran through runOnKernelThreadTcb.
struct Seen {
    pthread_t self{};
    bool onUserThread = true;
};

void record(void* raw) {
    auto* seen = static_cast<Seen*>(raw);
    seen->self = pthread_self();  // glibc's THREAD_SELF
    seen->onUserThread = bool(arbrt::self());
    gValue = -1;  // the kernel thread's copy
    errno = 1234;
}

TEST_F(KernelThreadTcb, UserThread_RunsAsItsCarrierAndGetsItsTcbBack) {
    const arbrt::ThreadId t = arbrt::createThreadWith(pinnedTo(0), [] {
        const arbrt::ThreadId me = arbrt::self();
        const pthread_t mine = pthread_self();
        errno = 77;
        gValue = 8;
        Seen first, second;
        arbrt::runOnKernelThreadTcb(record, &first);
        arbrt::runOnKernelThreadTcb(record, &second);
        EXPECT_NE(first.self, mine);
        EXPECT_EQ(first.self, second.self);  // pinned: the same carrier both times
        EXPECT_FALSE(first.onUserThread);
        EXPECT_EQ(pthread_self(), mine);
        EXPECT_TRUE(arbrt::self() == me);
        EXPECT_EQ(errno, 77);
        EXPECT_EQ(gValue, 8);
    });
    EXPECT_EQ(arbrt::join(t), 0);
}

TEST_F(KernelThreadTcb, KernelThread_PlainCall) {
    Seen seen;
    gValue = 3;
    arbrt::runOnKernelThreadTcb(record, &seen);
    EXPECT_EQ(seen.self, pthread_self());
    EXPECT_FALSE(seen.onUserThread);
    EXPECT_EQ(gValue, -1);
    errno = 0;
}

std::atomic<pthread_t> gHandlerSaw{};
std::atomic<int> gHandlerRuns{0};

void onSignal(int) {
    const int saved = errno;
    Seen seen;
    arbrt::runOnKernelThreadTcb(record, &seen);
    gHandlerSaw.store(seen.self);
    gHandlerRuns.fetch_add(1);
    errno = saved;
}

TEST_F(KernelThreadTcb, SignalHandler_InterruptsAComputingUserThread) {
    struct sigaction sa {};
    sa.sa_handler = onSignal;
    sa.sa_flags = SA_RESTART;
    struct sigaction old {};
    ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
    gHandlerRuns = 0;
    std::atomic<bool> running{false}, stop{false};
    std::atomic<pthread_t> userTcb{};
    std::atomic<int> corrupt{0};
    const arbrt::ThreadId t = arbrt::createThreadWith(pinnedTo(1), [&] {
        gValue = 11;
        userTcb.store(pthread_self());
        running.store(true);
        while (!stop.load(std::memory_order_relaxed)) {  // no calls: the carrier stays on us
            if (gValue != 11) corrupt.fetch_add(1);
        }
        if (pthread_self() != userTcb.load() || gValue != 11) corrupt.fetch_add(1);
    });
    ASSERT_TRUE(eventually([&] { return running.load(); }));
    const int tid = arbrt::kernelTidOf(t);
    ASSERT_GT(tid, 0);
    ASSERT_EQ(syscall(SYS_tgkill, getpid(), tid, SIGUSR1), 0);
    ASSERT_TRUE(eventually([&] { return gHandlerRuns.load() == 1; }));
    stop.store(true);
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_NE(gHandlerSaw.load(), userTcb.load());  // the carrier's own TCB
    EXPECT_NE(gHandlerSaw.load(), pthread_self());
    EXPECT_EQ(corrupt.load(), 0);
    sigaction(SIGUSR1, &old, nullptr);
}

}  // namespace
