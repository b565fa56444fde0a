// Shared helpers for the runtime's tests: a fixture that runs the runtime with an explicit number
// of cores, bounded spin-waits, attribute shorthands, deterministic CPU work and a way to keep
// cores busy so that no idle core steals a thread a test wants to observe where it was placed.
//
// Rules the tests follow: no sleep is ever used to order events (spin-waits on atomics, the
// runtime's primitives, or the single-core FIFO argument below); the number of cores is always
// explicit and independent of the host's CPUs (more cores than CPUs is intended).
//
// The single-core FIFO argument: threads pinned to one core (allowed = {c}) are never stolen, and a
// core runs its runnable threads in FIFO order without preemption. So when a pinned driver yields,
// every thread that was runnable on that core runs (until it blocks, yields or exits) before the
// driver continues; a test can thus check "did X become runnable?" without sleeping.
#pragma once

#include <arbrt/arbrt.h>
#include <arbrt/embed/fork.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace arbrt_test {

// A spin-wait that has not succeeded after this long has failed: it is a hang guard, never the
// time a test expects to wait.
constexpr std::chrono::seconds kHangLimit{30};

constexpr uint64_t kMicrosecond = 1'000;
constexpr uint64_t kMillisecond = 1'000'000;
constexpr uint64_t kSecond = 1'000'000'000;

// A CoreSet from a list of core numbers.
inline arbrt::CoreSet coreSet(std::initializer_list<int> cores) {
    arbrt::CoreSet set;
    for (int c : cores) set.set(size_t(c));
    return set;
}

// Attributes for a thread that starts on `core` and may run nowhere else (never stolen).
inline arbrt::ThreadAttributes pinnedTo(int core) {
    arbrt::ThreadAttributes attributes;
    attributes.core = core;
    attributes.allowed = coreSet({core});
    return attributes;
}

// Lets others run while spinning: the runtime's yield on a user thread, sched_yield on a kernel
// thread (the host may have fewer CPUs than the runtime has carriers).
inline void relax() {
    if (arbrt::self()) {
        arbrt::yield();
    } else {
        sched_yield();
    }
}

// fork() wrapped in the runtime's hooks the way the preload's atfork handlers do it; a child whose
// runtime could not be rebuilt exits with status 90.
inline pid_t forkWithRuntime(int childCores) {
    arbrt::prepareFork();
    const pid_t pid = fork();
    if (pid == 0) {
        if (arbrt::childAfterFork(childCores)) _exit(90);
    } else {
        arbrt::parentAfterFork();
    }
    return pid;
}

// The exit status of child `pid` (waited for); 1000 + the wait status if it did not exit.
inline int exitStatusOf(pid_t pid) {
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + status;
}

// Spins (relaxing) until pred() holds; false if it still does not after kHangLimit.
template <typename Pred>
bool eventually(Pred pred) {
    const auto limit = std::chrono::steady_clock::now() + kHangLimit;
    while (!pred()) {
        if (std::chrono::steady_clock::now() > limit) return false;
        relax();
    }
    return true;
}

// The number of kernel threads in this process (entries of /proc/self/task). A thread whose join
// just returned may still be listed for a moment (the kernel wakes the joiner before the thread is
// gone): compare a count taken before with <= or eventually(), not == straight after a join.
inline int kernelThreads() {
    DIR* dir = opendir("/proc/self/task");
    if (!dir) return -1;
    int n = 0;
    while (const dirent* e = readdir(dir)) n += e->d_name[0] != '.';
    closedir(dir);
    return n;
}

// Deterministic CPU work: `iterations` rounds of xorshift the compiler cannot drop. A fixed amount
// of work (not of time), so a test's outcome never depends on the clock.
inline uint64_t burn(uint64_t iterations) {
    uint64_t x = 88172645463325252ull;
    for (uint64_t i = 0; i < iterations; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        asm volatile("" : "+r"(x));
    }
    return x;
}

// Has every carrier running: `cores` threads that each wait (without yielding) until all of them
// run at once, which needs one carrier each. Standalone start makes core 0's carrier only and the
// rest once a second thread lives (deferred_carriers_test.cc); tests written about idle carriers,
// steals and the netpoller start from every carrier there. False if they never all met.
inline bool startEveryCarrier(int cores) {
    std::atomic<int> arrived{0};
    std::atomic<bool> met{true};
    std::vector<arbrt::ThreadId> threads;
    for (int i = 0; i < cores; ++i) {
        threads.push_back(arbrt::createThread([&] {
            arrived.fetch_add(1);
            const auto limit = std::chrono::steady_clock::now() + kHangLimit;
            while (arrived.load() < cores) {
                if (std::chrono::steady_clock::now() > limit) {
                    met = false;
                    return;
                }
            }
        }));
    }
    for (arbrt::ThreadId t : threads) arbrt::join(t);
    return met.load();
}

// Starts the runtime with kCores cores (every carrier running) for each test and stops it
// afterwards; stop() must succeed, i.e. every user thread the test created is gone.
template <int kCores>
class RuntimeTest : public ::testing::Test {
  protected:
    void SetUp() override {
        arbrt::RuntimeOptions options;
        options.numCores = kCores;
        const auto err = arbrt::start(options);
        ASSERT_FALSE(err.has_value()) << err->message;
        ASSERT_EQ(arbrt::numCores(), kCores);
        ASSERT_TRUE(startEveryCarrier(kCores)) << "the carriers never all ran";
    }
    void TearDown() override { EXPECT_TRUE(arbrt::stop()) << "user threads still alive"; }
};

// Keeps the given cores busy with pinned threads that only yield, so those carriers never go idle
// and never steal. Lets a test observe placement on the remaining cores deterministically. The
// spinners yield, so threads queued on their cores still run.
class CoreOccupier {
  public:
    explicit CoreOccupier(const std::vector<int>& cores) {
        for (int c : cores) {
            threads_.push_back(arbrt::createThreadWith(pinnedTo(c), [this] {
                running_.fetch_add(1);
                while (!stop_.load(std::memory_order_relaxed)) arbrt::yield();
            }));
        }
        const int n = int(cores.size());
        ready_ = eventually([&] { return running_.load() == n; });
    }
    ~CoreOccupier() {
        stop_.store(true);
        for (arbrt::ThreadId t : threads_) arbrt::join(t);
    }
    CoreOccupier(const CoreOccupier&) = delete;
    CoreOccupier& operator=(const CoreOccupier&) = delete;

    // True once every spinner runs on its core.
    bool ready() const { return ready_; }

  private:
    std::vector<arbrt::ThreadId> threads_;
    std::atomic<int> running_{0};
    std::atomic<bool> stop_{false};
    bool ready_ = false;
};

// Every core of the running runtime except `core`.
inline std::vector<int> allCoresBut(int core) {
    std::vector<int> cores;
    for (int c = 0; c < arbrt::numCores(); ++c) {
        if (c != core) cores.push_back(c);
    }
    return cores;
}

}  // namespace arbrt_test
