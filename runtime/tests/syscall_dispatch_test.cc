// Syscall user dispatch (src/syscall_dispatch.h) on the runtime alone, with a handler of the
// test's own: a system call issued by the `syscall` instruction outside libc (here: in the
// preempt workload library) from a user thread reaches the handler in normal context, whose
// result the program sees; every register and the vector state survive the trip; libc's own calls
// are never trapped; a handler may park the thread like any interposed call. Skips where the kernel
// lacks the feature (Linux < 5.11).
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "arbrt/embed/platform.h"
#include "preempt/workload.h"
#include "test_util.h"

namespace {

// A system call number no kernel has: the handler answers it; the kernel would say ENOSYS.
constexpr long kPrivateCall = 100'000;
std::atomic<int> gHandled{0};
std::atomic<arbrt::ThreadId*> gParkFor{nullptr};

// The test's rawSyscallHandler: the private call returns its first argument doubled (and yields
// first, so the trip through the trampoline includes a context switch); anything else runs as is.
long handler(long number, const long args[6]) {
    gHandled.fetch_add(1);
    if (number == kPrivateCall) {
        arbrt::yield();
        return args[0] * 2;
    }
    return syscall(number, args[0], args[1], args[2], args[3], args[4], args[5]);
}

void onSigsys(int, siginfo_t* info, void* context) {
    if (!arbrt::onSyscallDispatchSignal(info, context)) abort();  // no other SIGSYS here
}

class SyscallDispatch : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string why;
        if (!arbrt::syscallDispatchAvailable(&why))
            GTEST_SKIP() << "no syscall user dispatch: " << why;
        struct sigaction sa {};
        sa.sa_sigaction = onSigsys;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        ASSERT_EQ(sigaction(SIGSYS, &sa, &saved_), 0);
        arbrt::RuntimeOptions options;
        options.numCores = 2;
        options.rawSyscallHandler = handler;
        const auto err = arbrt::start(options);
        ASSERT_FALSE(err.has_value()) << err->message;
        ASSERT_TRUE(arbrt::syscallDispatchActive());
        gHandled.store(0);
    }
    void TearDown() override {
        if (IsSkipped()) return;
        EXPECT_TRUE(arbrt::stop()) << "user threads still alive";
        sigaction(SIGSYS, &saved_, nullptr);
    }
    struct sigaction saved_ {};
};

TEST_F(SyscallDispatch, RawCall_RunsTheHandlerAndReturnsItsResult) {
    long result = 0;
    const uint64_t before = arbrt::stats().trappedSyscalls;
    arbrt::ThreadId t = arbrt::createThread(
        [&] { result = preempt_workload::rawSyscall3(kPrivateCall, 21, 0, 0); });
    ASSERT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(result, 42);  // natively: -ENOSYS
    EXPECT_EQ(gHandled.load(), 1);
    EXPECT_EQ(arbrt::stats().trappedSyscalls, before + 1);
}

TEST_F(SyscallDispatch, RawCall_PassesThroughToTheKernel) {
    long pid = 0;
    arbrt::ThreadId t =
        arbrt::createThread([&] { pid = preempt_workload::rawSyscall3(SYS_getpid, 0, 0, 0); });
    ASSERT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(pid, long(getpid()));
    EXPECT_EQ(gHandled.load(), 1);
}

TEST_F(SyscallDispatch, RawCall_KeepsEveryRegisterAndTheVectorState) {
    // Many threads on two cores, each yielding inside the handler: the trampoline's save must
    // survive switches to threads that use the same registers.
    constexpr int kThreads = 8;
    constexpr int kCalls = 200;
    std::atomic<int> clobbered{0};
    std::vector<arbrt::ThreadId> threads;
    for (int i = 0; i < kThreads; ++i) {
        threads.push_back(arbrt::createThread([&clobbered, i] {
            for (int k = 0; k < kCalls; ++k) {
                clobbered.fetch_add(
                    preempt_workload::rawSyscallClobbers(kPrivateCall, uint64_t(i * kCalls + k)));
            }
        }));
    }
    for (auto t : threads) ASSERT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(clobbered.load(), 0);
    EXPECT_EQ(gHandled.load(), kThreads * kCalls);
}

TEST_F(SyscallDispatch, LibcCall_IsNeverTrapped) {
    const uint64_t before = arbrt::stats().trappedSyscalls;
    arbrt::ThreadId t = arbrt::createThread([] {
        for (int i = 0; i < 100; ++i) {
            EXPECT_EQ(getppid(), getppid());
            EXPECT_EQ(syscall(SYS_getpid), long(getpid()));  // libc's syscall(): inside libc
        }
    });
    ASSERT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(gHandled.load(), 0);
    EXPECT_EQ(arbrt::stats().trappedSyscalls, before);
}

TEST_F(SyscallDispatch, KernelThread_IsNeverTrapped) {
    // Only carriers turn dispatch on: this (non-carrier) kernel thread's raw call goes straight
    // to the kernel, and the private number gets the kernel's answer.
    EXPECT_EQ(preempt_workload::rawSyscall3(kPrivateCall, 1, 0, 0), -ENOSYS);
    EXPECT_EQ(gHandled.load(), 0);
}

}  // namespace
