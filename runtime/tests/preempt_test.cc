// Preemption at safe points, on one core with a 1 ms time slice: a thread that computes without
// calling the runtime lets waiting threads run, its registers and FP/vector state survive every
// preemption, and code in the runtime's own object (here: this test executable) is never
// interrupted. The compute kernels live in a shared library of their own (preempt/workload.cc).
#include <link.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cstring>

#include "preempt/workload.h"
#include "sched/preempt.h"
#include "test_util.h"

namespace {

class Preempt : public ::testing::Test {
  protected:
    void SetUp() override {
        arbrt::RuntimeOptions options;
        options.numCores = 1;
        options.preemptSignal = SIGURG;  // unused by this program
        options.installPreemptHandler = true;
        options.timeSliceNs = arbrt_test::kMillisecond;
        const auto err = arbrt::start(options);
        ASSERT_FALSE(err.has_value()) << err->message;
    }
    void TearDown() override { EXPECT_TRUE(arbrt::stop()) << "user threads still alive"; }
};

TEST_F(Preempt, Start_RejectsTinyTimeSlice) {
    arbrt::stop();
    arbrt::RuntimeOptions options;
    options.numCores = 1;
    options.preemptSignal = SIGURG;
    options.timeSliceNs = 1000;
    const auto err = arbrt::start(options);
    ASSERT_TRUE(err.has_value());
    EXPECT_EQ(err->code, arbrt::Errc::invalidArgument);
    options.timeSliceNs = arbrt_test::kMillisecond;
    ASSERT_FALSE(arbrt::start(options).has_value());  // for TearDown
}

TEST_F(Preempt, Yield_ComputingThreadLetsWaitingThreadRun) {
    std::atomic<bool> stop{false};
    const uint64_t before = arbrt::stats().preemptions;
    // One core, FIFO: the spinner runs first and never calls the runtime; only preemption lets the
    // setter run.
    const arbrt::ThreadId spinner =
        arbrt::createThread([&] { preempt_workload::spinUntil(&stop); });
    const arbrt::ThreadId setter = arbrt::createThread([&] { stop.store(true); });
    EXPECT_EQ(arbrt::join(setter), 0);
    EXPECT_EQ(arbrt::join(spinner), 0);
    EXPECT_GE(arbrt::stats().preemptions, before + 1);
}

TEST_F(Preempt, Yield_RegistersAndFpStateSurvive) {
    constexpr int kThreads = 4;
    constexpr uint64_t kIterations = 20'000'000;  // tens of ms each: many 1 ms slices
    std::array<uint64_t, kThreads> expected{}, got{};
    for (int i = 0; i < kThreads; ++i) {
        expected[size_t(i)] = preempt_workload::mixedWork(uint64_t(i) + 1, kIterations);
    }
    const uint64_t before = arbrt::stats().preemptions;
    std::array<arbrt::ThreadId, kThreads> threads;
    for (int i = 0; i < kThreads; ++i) {
        threads[size_t(i)] = arbrt::createThread([&got, i] {
            got[size_t(i)] = preempt_workload::mixedWork(uint64_t(i) + 1, kIterations);
        });
    }
    for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(got, expected);
    EXPECT_GE(arbrt::stats().preemptions, before + kThreads - 1)
        << "the threads must have been interleaved by preemption";
}

TEST_F(Preempt, Yield_NeverInsideTheRuntimesObject) {
    std::atomic<bool> computed{false}, sawComputed{false};
    const uint64_t before = arbrt::stats().preemptions;
    // burn() is compiled into this executable, which also holds the runtime: unsafe code.
    const arbrt::ThreadId worker = arbrt::createThread([&] {
        const uint64_t sink = arbrt_test::burn(60'000'000);  // tens of ms: many slices
        asm volatile("" ::"r"(sink));
        computed.store(true);
    });
    const arbrt::ThreadId observer = arbrt::createThread([&] { sawComputed = computed.load(); });
    EXPECT_EQ(arbrt::join(observer), 0);
    EXPECT_EQ(arbrt::join(worker), 0);
    EXPECT_TRUE(sawComputed.load()) << "the worker was switched out inside the runtime's object";
    EXPECT_EQ(arbrt::stats().preemptions, before);
}

// The executable segment of the loaded object whose name starts with `prefix`: [begin, end).
std::pair<uintptr_t, uintptr_t> codeOf(const char* prefix) {
    struct Query {
        const char* prefix;
        std::pair<uintptr_t, uintptr_t> range;
    } query{prefix, {0, 0}};
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) {
            auto* q = static_cast<Query*>(data);
            const char* name = info->dlpi_name ? std::strrchr(info->dlpi_name, '/') : nullptr;
            name = name ? name + 1 : info->dlpi_name;
            if (!name || std::strncmp(name, q->prefix, std::strlen(q->prefix)) != 0) return 0;
            for (int i = 0; i < info->dlpi_phnum; ++i) {
                const ElfW(Phdr)& ph = info->dlpi_phdr[i];
                if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
                q->range = {info->dlpi_addr + ph.p_vaddr,
                            info->dlpi_addr + ph.p_vaddr + ph.p_memsz};
                return 1;
            }
            return 0;
        },
        &query);
    return query.range;
}

// The vDSO (clock_gettime) runs inside libc and the runtime with their locks held (a timer's
// deadline is converted under its core's timer lock): a thread switched out there left that lock
// held and every carrier spinning for it. libc is unsafe too; the compute kernels' library is not.
TEST_F(Preempt, Filter_VdsoAndLibcAreUnsafeTheWorkloadIsNot) {
    using arbrt::detail::isUnsafeForPreemption;
    const auto vdso = codeOf("linux-vdso.so");
    ASSERT_NE(vdso.first, 0u) << "no vDSO in this process";
    EXPECT_TRUE(isUnsafeForPreemption(vdso.first));
    EXPECT_TRUE(isUnsafeForPreemption(vdso.second - 1));
    const auto libc = codeOf("libc.so");
    ASSERT_NE(libc.first, 0u);
    EXPECT_TRUE(isUnsafeForPreemption(libc.first));
    EXPECT_FALSE(isUnsafeForPreemption(reinterpret_cast<uintptr_t>(&preempt_workload::spinFor)));
}

// Boost.Context's jump_fcontext is the context switch itself (its stack pointer already the next
// thread's while the carrier runs the previous one): a preemption there saved one thread's
// registers as another's. Unsafe when it is a shared library (skipped when linked statically).
TEST_F(Preempt, Filter_BoostContextIsUnsafe) {
    const auto boost = codeOf("libboost_context");
    if (boost.first == 0) GTEST_SKIP() << "Boost.Context is not a shared library here";
    EXPECT_TRUE(arbrt::detail::isUnsafeForPreemption(boost.first));
    EXPECT_TRUE(arbrt::detail::isUnsafeForPreemption(boost.second - 1));
}

// interruptAtSafePoint, from a handler of the embedder's own signal: the computing thread runs the
// resume hook (on itself, in normal context) and carries on without being switched out.
std::atomic<bool> gHookStop{false};
std::atomic<uint64_t> gHookRanOn{0};
std::atomic<int> gRedirected{0};

void onInterruptSignal(int, siginfo_t*, void* context) {
    if (arbrt::interruptAtSafePoint(context)) gRedirected.fetch_add(1);
}

void stopFromHook() {
    gHookRanOn.store(reinterpret_cast<uint64_t>(arbrt::self().context));
    gHookStop.store(true);
}

TEST_F(Preempt, InterruptAtSafePoint_RunsResumeHookWithoutYield) {
    struct sigaction sa {
    }, old{};
    sa.sa_sigaction = onInterruptSignal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    ASSERT_EQ(sigaction(SIGUSR2, &sa, &old), 0);
    arbrt::setPreemptResumeHook(stopFromHook);
    gHookStop.store(false);
    const uint64_t before = arbrt::stats().preemptions;
    const arbrt::ThreadId spinner =
        arbrt::createThread([] { preempt_workload::spinUntil(&gHookStop); });
    // The test thread is not a user thread: it signals the spinner's carrier until the hook ran
    // (the first signals may land before the spinner runs, or in the runtime: refused).
    const uint64_t deadline = arbrt::nowNs() + 20 * arbrt_test::kSecond;
    while (!gHookStop.load() && arbrt::nowNs() < deadline) {
        if (const int tid = arbrt::kernelTidOf(spinner))
            syscall(SYS_tgkill, getpid(), tid, SIGUSR2);
        usleep(200);
    }
    EXPECT_EQ(arbrt::join(spinner), 0);
    arbrt::setPreemptResumeHook(nullptr);
    sigaction(SIGUSR2, &old, nullptr);
    EXPECT_TRUE(gHookStop.load()) << "the hook never ran";
    EXPECT_EQ(gHookRanOn.load(), reinterpret_cast<uint64_t>(spinner.context));
    EXPECT_GE(gRedirected.load(), 1);
    EXPECT_EQ(arbrt::stats().preemptions, before) << "interrupting must not switch it out";
}

}  // namespace
