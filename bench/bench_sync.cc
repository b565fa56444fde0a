// arbrt synchronisation: condition-variable ping-pong (same core and across cores) and the
// uncontended mutex.
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
