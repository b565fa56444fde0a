// The same operations on kernel threads (std::thread, std::mutex, std::condition_variable,
// sched_yield), in the same binary, as the baseline the arbrt numbers are compared with. These run
// on the benchmark's own kernel thread, not on a user thread.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "bench_util.h"
#include "ping_pong.h"

namespace {

// One iteration: std::thread creation + join (clone, and the kernel scheduling the child).
void BM_StdThread_SpawnJoin(benchmark::State& state) {
    for (auto _ : state) std::thread([] {}).join();
    bench::reportPerOp(state, 1);
}
BENCHMARK(BM_StdThread_SpawnJoin)->UseRealTime();

// Starts `partner` as a kernel thread pinned to the same CPU as the caller's ScopedCpuPin, so the
// kernel-thread numbers are same-CPU like the arbrt ones they sit next to.
template <typename Fn>
std::thread startPinnedPartner(int cpu, Fn fn) {
    return std::thread([cpu, fn]() mutable {
        bench::ScopedCpuPin pin(cpu);
        fn();
    });
}

// One iteration = one round trip = two one-way handoffs through std::mutex and
// std::condition_variable (futex wake + wait); per_op is one handoff. Both threads on one CPU.
void BM_StdThread_CondvarPingPong(benchmark::State& state) {
    bench::ScopedCpuPin pin;
    bench::PingPong<std::mutex, std::condition_variable> pp;
    std::thread partner = startPinnedPartner(pin.cpu(), [&pp] { pp.partnerLoop(); });
    for (auto _ : state) pp.driverRoundTrip();
    pp.finish();
    partner.join();
    bench::reportPerOp(state, 2);
}
BENCHMARK(BM_StdThread_CondvarPingPong)->UseRealTime();

// One iteration = two sched_yield() calls: both threads on one CPU yield to each other (a yield
// with nobody else runnable on the CPU would only measure the system call).
void BM_StdThread_Yield(benchmark::State& state) {
    bench::ScopedCpuPin pin;
    std::atomic<bool> stop{false};
    std::thread partner = startPinnedPartner(pin.cpu(), [&stop] {
        while (!stop.load(std::memory_order_relaxed)) std::this_thread::yield();
    });
    for (auto _ : state) std::this_thread::yield();
    stop.store(true, std::memory_order_relaxed);
    partner.join();
    bench::reportPerOp(state, 2);
}
BENCHMARK(BM_StdThread_Yield)->UseRealTime();

// One iteration: lock + unlock of an uncontended std::mutex (glibc's pthread mutex fast path).
void BM_StdThread_MutexUncontended(benchmark::State& state) {
    std::mutex mutex;
    for (auto _ : state) {
        mutex.lock();
        benchmark::ClobberMemory();
        mutex.unlock();
    }
    bench::reportPerOp(state, 1);
}
BENCHMARK(BM_StdThread_MutexUncontended)->UseRealTime();

}  // namespace
