// arbrt synchronisation: condition-variable ping-pong (same core and across cores), the
// uncontended and the contended mutex, and the cross-core cache-line floor the cross-core rows sit
// on.
#include <atomic>
#include <cstdint>
#include <mutex>

#include "bench_util.h"
#include "ping_pong.h"

namespace {

using bench::kDriverCore;
using bench::kOtherCore;

// arbrt::CondVar with the std::condition_variable calls PingPong uses.
class ArbrtCondVar {
  public:
    // Waits on the mutex the std::unique_lock holds; it is owned again on return, as with std.
    void wait(std::unique_lock<arbrt::Mutex>& lock) { cv_.wait(*lock.mutex()); }
    void notify_one() { cv_.notifyOne(); }

  private:
    arbrt::CondVar cv_;
};

using ArbrtPingPong = bench::PingPong<arbrt::Mutex, ArbrtCondVar>;

// One iteration = one round trip = two one-way handoffs (see ping_pong.h); per_op is one handoff.
// The driver runs on core 0 and the partner on `partnerCore`, both pinned.
void pingPong(benchmark::State& state, int partnerCore) {
    bench::runOnUserThread(state, kDriverCore, [&state, partnerCore] {
        ArbrtPingPong pp;
        arbrt::ThreadId partner =
            arbrt::createThreadWith(bench::pinnedTo(partnerCore), [&pp] { pp.partnerLoop(); });
        if (!partner) {
            state.SkipWithError("arbrt: cannot create the partner thread");
            return;
        }
        for (auto _ : state) pp.driverRoundTrip();
        pp.finish();
        arbrt::join(partner);
        bench::reportPerOp(state, 2);
    });
}

void BM_CondvarPingPong(benchmark::State& state) {
    pingPong(state, kDriverCore);
}
BENCHMARK(BM_CondvarPingPong)->UseRealTime();

// As BM_CondvarPingPong with the partner on core 1: every handoff wakes the other core's
// dispatcher (which polls while idle) and moves the mutex's and queue's cache lines across.
void BM_CondvarPingPongCrossCore(benchmark::State& state) {
    if (!bench::haveCores(state, 2)) return;
    pingPong(state, kOtherCore);
}
BENCHMARK(BM_CondvarPingPongCrossCore)->UseRealTime();

// The hardware floor under the cross-core rows: one iteration is a round trip of a cache line
// between a spinning user thread on core 0 and one on core 1 (no runtime call on the way); per_op
// is one one-way transfer. A cross-core create or handoff moves several such lines.
void BM_CacheLineHandoffCrossCore(benchmark::State& state) {
    if (!bench::haveCores(state, 2)) return;
    bench::runOnUserThread(state, kDriverCore, [&state] {
        alignas(64) std::atomic<uint64_t> line{0};  // odd: the partner's turn; ~0: stop
        arbrt::ThreadId partner = arbrt::createThreadWith(bench::pinnedTo(kOtherCore), [&line] {
            for (;;) {
                uint64_t v = line.load(std::memory_order_acquire);
                if (v == ~uint64_t{0}) return;
                if (v & 1) line.store(v + 1, std::memory_order_release);
                bench::cpuRelax();
            }
        });
        if (!partner) {
            state.SkipWithError("arbrt: cannot create the partner thread");
            return;
        }
        uint64_t v = 0;
        for (auto _ : state) {
            line.store(++v, std::memory_order_release);
            while (line.load(std::memory_order_acquire) == v) bench::cpuRelax();
            ++v;
        }
        line.store(~uint64_t{0}, std::memory_order_release);
        arbrt::join(partner);
        bench::reportPerOp(state, 2);
    });
}
BENCHMARK(BM_CacheLineHandoffCrossCore)->UseRealTime();

// One iteration: lock + unlock of an arbrt::Mutex nobody else touches (the fast path: two atomic
// read-modify-writes). Runs on a user thread like real callers.
void BM_MutexUncontended(benchmark::State& state) {
    bench::runOnUserThread(state, kDriverCore, [&state] {
        arbrt::Mutex mutex;
        for (auto _ : state) {
            mutex.lock();
            benchmark::ClobberMemory();
            mutex.unlock();
        }
        bench::reportPerOp(state, 1);
    });
}
BENCHMARK(BM_MutexUncontended)->UseRealTime();

// Four user threads, two per core, taking an arbrt::Mutex around a small critical section (a few
// shared counters), as pthread-prims' mutex_contended_4t does for pthread mutexes. The driver's
// pairs are the iterations; the three partners run until it stops, and every thread's pairs count:
// per_op is real time per lock + unlock pair of any thread (the lock's throughput).
void BM_MutexContended4t(benchmark::State& state) {
    if (!bench::haveCores(state, 2)) return;
    bench::runOnUserThread(state, kDriverCore, [&state] {
        struct Shared {
            arbrt::Mutex mutex;
            uint64_t counters[4] = {};  // guarded by mutex; counters[0] counts pairs
        } shared;
        std::atomic<bool> stop{false};
        auto pair = [&shared](uint64_t i) {
            shared.mutex.lock();
            ++shared.counters[0];
            for (int k = 1; k < 4; ++k) shared.counters[k] += i;
            shared.mutex.unlock();
        };
        arbrt::ThreadId partners[3];
        const int cores[3] = {kOtherCore, kDriverCore, kOtherCore};
        for (int p = 0; p < 3; ++p) {
            partners[p] = arbrt::createThreadWith(bench::pinnedTo(cores[p]), [&pair, &stop] {
                for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) pair(i);
            });
            if (!partners[p]) {
                state.SkipWithError("arbrt: cannot create a partner thread");
                stop = true;
                for (int q = 0; q < p; ++q) arbrt::join(partners[q]);
                return;
            }
        }
        uint64_t i = 0, before = 0;
        for (auto _ : state) {
            if (i == 0) {  // the partners started before the timing did
                shared.mutex.lock();
                before = shared.counters[0];
                shared.mutex.unlock();
            }
            pair(i++);
        }
        shared.mutex.lock();
        const uint64_t pairs = shared.counters[0] - before;
        shared.mutex.unlock();
        stop = true;
        for (arbrt::ThreadId p : partners) arbrt::join(p);
        bench::reportPerOp(state, i ? double(pairs) / double(i) : 1);
    });
}
BENCHMARK(BM_MutexContended4t)->UseRealTime();

}  // namespace
