// arbrt synchronisation: condition-variable ping-pong (same core and across cores), the
// uncontended mutex, and the cross-core cache-line floor the cross-core rows sit on.
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

}  // namespace
