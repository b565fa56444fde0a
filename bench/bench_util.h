// Helpers shared by the arbrt-bench benchmarks: running a benchmark loop inside a pinned user
// thread, pinning kernel threads, and the `per_op` counter that compare.sh reads.
#pragma once

#include <arbrt/arbrt.h>
#include <benchmark/benchmark.h>
#include <pthread.h>
#include <sched.h>

#include <utility>

namespace bench {

// The cores the benchmarks use. main() starts the runtime with 2 cores whatever the host has, so
// these always exist (unless --arbrt_cores=1 is given for a diagnosis run).
constexpr int kDriverCore = 0;
constexpr int kOtherCore = 1;

// Attributes that keep a thread on `core`: the placement asks for it and stealing cannot move it,
// so a same-core pair is never split and a cross-core pair never merged.
inline arbrt::ThreadAttributes pinnedTo(int core, bool detached = false, size_t stackSize = 0) {
    arbrt::ThreadAttributes attributes;
    attributes.core = core;
    attributes.allowed.set(size_t(core));
    attributes.detached = detached;
    attributes.stackSize = stackSize;
    return attributes;
}

// Runs body() on a user thread pinned to `core` and waits for it from the calling (kernel) thread.
// Benchmarks whose timed loop must run on a user thread call this with a body that holds the
// `for (auto _ : state)` loop.
template <typename Body>
void runOnUserThread(benchmark::State& state, int core, Body&& body) {
    arbrt::ThreadId driver = arbrt::createThreadWith(pinnedTo(core), std::forward<Body>(body));
    if (!driver) {
        state.SkipWithError("arbrt: cannot create the driver user thread");
        return;
    }
    arbrt::join(driver);
}

// Skips a benchmark that needs more cores than the runtime was started with (diagnosis runs with
// --arbrt_cores=1); returns true when it may run.
inline bool haveCores(benchmark::State& state, int needed) {
    if (arbrt::numCores() >= needed) return true;
    state.SkipWithError("needs more arbrt cores (started with --arbrt_cores < 2)");
    return false;
}

// Reports `per_op`: seconds of real time per operation, where one iteration performs
// `opsPerIteration` operations (e.g. 2 one-way handoffs per ping-pong round trip), and
// `ops_per_iter` itself. compare.sh tabulates per_op (and cpu_time / ops_per_iter beside it), so
// the table is in the operation's unit whatever an iteration is.
inline void reportPerOp(benchmark::State& state, double opsPerIteration) {
    state.counters["per_op"] =
        benchmark::Counter(double(state.iterations()) * opsPerIteration,
                           benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.counters["ops_per_iter"] = opsPerIteration;
}

// Spins politely (PAUSE) on a cross-core flag: the waiter must not leave its core, since leaving
// is what the benchmark measures on the other side.
inline void cpuRelax() {
    __builtin_ia32_pause();
}

// Pins the calling kernel thread to one CPU for a same-CPU kernel-thread comparison and restores
// its previous mask on destruction (the benchmark process's main thread runs later benchmarks).
class ScopedCpuPin {
  public:
    // Pins to `cpu`, or to the first CPU of the current mask when cpu < 0.
    explicit ScopedCpuPin(int cpu = -1) {
        saved_ok_ = pthread_getaffinity_np(pthread_self(), sizeof(saved_), &saved_) == 0;
        cpu_ = cpu >= 0 ? cpu : firstAllowedCpu();
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu_, &one);
        pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
    }
    ~ScopedCpuPin() {
        if (saved_ok_) pthread_setaffinity_np(pthread_self(), sizeof(saved_), &saved_);
    }
    ScopedCpuPin(const ScopedCpuPin&) = delete;
    ScopedCpuPin& operator=(const ScopedCpuPin&) = delete;
    int cpu() const { return cpu_; }

  private:
    // The lowest CPU the caller may run on (0 when the mask cannot be read).
    static int firstAllowedCpu() {
        cpu_set_t set;
        if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
        for (int i = 0; i < CPU_SETSIZE; ++i) {
            if (CPU_ISSET(i, &set)) return i;
        }
        return 0;
    }

    cpu_set_t saved_;
    bool saved_ok_ = false;
    int cpu_ = 0;
};

}  // namespace bench
