// Thread creation on arbrt: spawn+join on one core, create-to-run across cores, and the sustained
// creation throughput of one creator whose children each compute for ~1 us.
#include <atomic>
#include <cstdint>

#include "bench_util.h"

namespace {

using bench::kDriverCore;
using bench::kOtherCore;
using bench::pinnedTo;

// One iteration: create a user thread on the creator's own core and join it. The child is pinned
// too, so an idle core cannot steal it and the numbers are those of a same-core spawn.
void BM_SpawnJoin(benchmark::State& state) {
    bench::runOnUserThread(state, kDriverCore, [&state] {
        const arbrt::ThreadAttributes child = pinnedTo(kDriverCore);
        for (auto _ : state) {
            arbrt::ThreadId id = arbrt::createThreadWith(child, [] {});
            if (!id) {
                state.SkipWithError("arbrt: thread creation failed");
                break;
            }
            arbrt::join(id);
        }
        bench::reportPerOp(state, 1);
    });
}
BENCHMARK(BM_SpawnJoin)->UseRealTime();

// One iteration: create a detached thread on core 1 from core 0 and spin until it has run (it
// stores the iteration's number). Measures creation plus the other core's dispatcher noticing the
// thread while it polls (an idle carrier polls for idleSpinNs before it sleeps, and each child
// arrives well within that). The child's exit overlaps with the next creation, as it would in a
// program.
void BM_CreateCrossCore(benchmark::State& state) {
    if (!bench::haveCores(state, 2)) return;
    bench::runOnUserThread(state, kDriverCore, [&state] {
        const arbrt::ThreadAttributes child = pinnedTo(kOtherCore, /*detached=*/true);
        std::atomic<uint64_t> ran{0};
        uint64_t n = 0;
        for (auto _ : state) {
            ++n;
            arbrt::ThreadId id = arbrt::createThreadWith(
                child, [&ran](uint64_t mine) { ran.store(mine, std::memory_order_release); }, n);
            if (!id) {
                state.SkipWithError("arbrt: thread creation failed");
                break;
            }
            while (ran.load(std::memory_order_acquire) != n) bench::cpuRelax();
        }
        bench::reportPerOp(state, 1);
    });
}
BENCHMARK(BM_CreateCrossCore)->UseRealTime();

// Work of a BM_CreateThroughput child: ~1 us of computation on the runtime's TSC clock.
void computeOneMicrosecond() {
    const uint64_t end = arbrt::nowNs() + 1000;
    while (arbrt::nowNs() < end) bench::cpuRelax();
}

// One iteration: the creator (on core 0) creates one detached child that computes ~1 us; children
// are placed by the runtime (power of two choices over both cores, then stealing). At most
// `window` children are unfinished at a time: when the window is full the creator yields, which
// also lets core 0 run its share of the children. items_per_second is the sustained rate; per_op
// its inverse. Children still running when the loop ends (at most `window`) finish untimed.
void createThroughput(benchmark::State& state, uint64_t window) {
    bench::runOnUserThread(state, kDriverCore, [&state, window] {
        arbrt::ThreadAttributes child;
        child.detached = true;
        std::atomic<uint64_t> done{0};
        uint64_t created = 0;
        for (auto _ : state) {
            while (created - done.load(std::memory_order_acquire) >= window) arbrt::yield();
            arbrt::ThreadId id = arbrt::createThreadWith(child, [&done] {
                computeOneMicrosecond();
                done.fetch_add(1, std::memory_order_release);
            });
            if (!id) {
                state.SkipWithError("arbrt: thread creation failed");
                break;
            }
            ++created;
        }
        while (done.load(std::memory_order_acquire) != created) arbrt::yield();
        state.SetItemsProcessed(int64_t(created));
        bench::reportPerOp(state, 1);
    });
}

// Up to 64 unfinished children: enough to keep both cores busy, and few enough that every context
// comes from the runtime's pool (RuntimeOptions::pooledContextsPerCore, 128 by default).
void BM_CreateThroughput(benchmark::State& state) {
    createThroughput(state, 64);
}
BENCHMARK(BM_CreateThroughput)->UseRealTime();

// Up to 1,024 unfinished children: more live threads than the pool keeps, so contexts cycle
// through the pool's overflow path (stack mmap/munmap, TLS allocate/free) as in a program with a
// deep backlog of short threads.
void BM_CreateThroughputDeepBacklog(benchmark::State& state) {
    createThroughput(state, 1024);
}
BENCHMARK(BM_CreateThroughputDeepBacklog)->UseRealTime();

}  // namespace
