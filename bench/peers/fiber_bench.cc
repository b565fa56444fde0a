// fiber-bench: the Boost.Fiber peer of arbrt-bench, for compare.sh's side-by-side table. The same
// operations with the same per_op counter (seconds per operation), all on one kernel thread under
// Boost.Fiber's default round-robin scheduler (so "same core" like the arbrt rows).
#include <benchmark/benchmark.h>

#include <atomic>
#include <boost/fiber/all.hpp>
#include <mutex>

#include "ping_pong.h"

namespace {

namespace fibers = boost::fibers;

// Same definition as bench_util.h's (kept separate so this peer does not depend on arbrt).
void reportPerOp(benchmark::State& state, double opsPerIteration) {
    state.counters["per_op"] =
        benchmark::Counter(double(state.iterations()) * opsPerIteration,
                           benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.counters["ops_per_iter"] = opsPerIteration;
}

// One iteration: create a fiber and join it. Stacks come from a pool (like arbrt's pooled
// contexts), which is Boost's recommended setting for many short fibers.
void BM_Fiber_SpawnJoin(benchmark::State& state) {
    fibers::pooled_fixedsize_stack stacks;
    for (auto _ : state) fibers::fiber(std::allocator_arg, stacks, [] {}).join();
    reportPerOp(state, 1);
}
BENCHMARK(BM_Fiber_SpawnJoin)->UseRealTime();

// As BM_Fiber_SpawnJoin with Boost's default stack allocator (a fresh stack per fiber).
void BM_Fiber_SpawnJoinDefaultStack(benchmark::State& state) {
    for (auto _ : state) fibers::fiber([] {}).join();
    reportPerOp(state, 1);
}
BENCHMARK(BM_Fiber_SpawnJoinDefaultStack)->UseRealTime();

// One iteration = one round trip = two one-way handoffs (ping_pong.h); per_op is one handoff.
void BM_Fiber_CondvarPingPong(benchmark::State& state) {
    bench::PingPong<fibers::mutex, fibers::condition_variable> pp;
    fibers::fiber partner([&pp] { pp.partnerLoop(); });
    for (auto _ : state) pp.driverRoundTrip();
    pp.finish();
    partner.join();
    reportPerOp(state, 2);
}
BENCHMARK(BM_Fiber_CondvarPingPong)->UseRealTime();

// One iteration = two yields (the driver's and the partner's); per_op is one yield.
void BM_Fiber_Yield(benchmark::State& state) {
    bool stop = false;  // one kernel thread: no atomics needed between fibers
    fibers::fiber partner([&stop] {
        while (!stop) boost::this_fiber::yield();
    });
    for (auto _ : state) boost::this_fiber::yield();
    stop = true;
    partner.join();
    reportPerOp(state, 2);
}
BENCHMARK(BM_Fiber_Yield)->UseRealTime();

// One iteration: lock + unlock of an uncontended boost::fibers::mutex.
void BM_Fiber_MutexUncontended(benchmark::State& state) {
    fibers::mutex mutex;
    for (auto _ : state) {
        mutex.lock();
        benchmark::ClobberMemory();
        mutex.unlock();
    }
    reportPerOp(state, 1);
}
BENCHMARK(BM_Fiber_MutexUncontended)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
