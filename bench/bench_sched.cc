// arbrt scheduling: yield between two threads on one core, and the block/signal handoff while
// many other threads sit blocked on the same core.
#include <atomic>
#include <vector>

#include "bench_util.h"

namespace {

using bench::kDriverCore;
using bench::pinnedTo;

// One iteration = two yields: the driver yields to the partner, which yields straight back. Both
// are pinned to core 0; per_op is one yield (one thread-to-thread switch through the run queue).
void BM_Yield(benchmark::State& state) {
    bench::runOnUserThread(state, kDriverCore, [&state] {
        std::atomic<bool> stop{false};
        arbrt::ThreadId partner = arbrt::createThreadWith(pinnedTo(kDriverCore), [&stop] {
            while (!stop.load(std::memory_order_relaxed)) arbrt::yield();
        });
        if (!partner) {
            state.SkipWithError("arbrt: cannot create the partner thread");
            return;
        }
        for (auto _ : state) arbrt::yield();
        stop.store(true, std::memory_order_relaxed);
        arbrt::join(partner);
        bench::reportPerOp(state, 2);
    });
}
BENCHMARK(BM_Yield)->UseRealTime();

// Two threads handing a turn back and forth with arbrt::signal()/block(). `turn` is 1 while the
// partner holds it; block() may return spuriously, so both sides re-check it.
struct SignalHandoff {
    std::atomic<int> turn{0};
    std::atomic<bool> stop{false};
    arbrt::ThreadId driver;
    arbrt::ThreadId partner;

    // Driver: hand the turn over and block until it is back (two one-way handoffs).
    void roundTrip() {
        turn.store(1, std::memory_order_release);
        arbrt::signal(partner);
        while (turn.load(std::memory_order_acquire) == 1) arbrt::block();
    }

    // Partner: give the turn back each time it arrives, until stop.
    void partnerLoop() {
        for (;;) {
            while (turn.load(std::memory_order_acquire) != 1 &&
                   !stop.load(std::memory_order_acquire)) {
                arbrt::block();
            }
            if (stop.load(std::memory_order_acquire)) return;
            turn.store(0, std::memory_order_release);
            arbrt::signal(driver);
        }
    }
};

// Creates `count` threads on core 0 that block until `release`, and returns once all of them are
// parked. Each increments `ready` and parks without yielding in between, so when the driver (same
// core, cooperative) sees ready == count after a yield, every one of them is parked.
std::vector<arbrt::ThreadId> parkBystanders(int count, std::atomic<int>& ready,
                                            std::atomic<bool>& release) {
    constexpr size_t kBystanderStack = 64 * 1024;  // they only block: keep 1,000 of them light
    const arbrt::ThreadAttributes attributes = pinnedTo(kDriverCore, false, kBystanderStack);
    std::vector<arbrt::ThreadId> ids;
    ids.reserve(size_t(count));
    for (int i = 0; i < count; ++i) {
        arbrt::ThreadId id = arbrt::createThreadWith(attributes, [&ready, &release] {
            ready.fetch_add(1, std::memory_order_relaxed);
            while (!release.load(std::memory_order_acquire)) arbrt::block();
        });
        if (!id) break;
        ids.push_back(id);
    }
    while (ready.load(std::memory_order_relaxed) != int(ids.size())) arbrt::yield();
    return ids;
}

// Wakes and joins the threads parkBystanders() created.
void releaseBystanders(const std::vector<arbrt::ThreadId>& ids, std::atomic<bool>& release) {
    release.store(true, std::memory_order_release);
    for (arbrt::ThreadId id : ids) arbrt::signal(id);
    for (arbrt::ThreadId id : ids) arbrt::join(id);
}

// BM_SignalBlocked/N: signal -> block handoff between two threads on core 0 while N other threads
// are blocked on core 0. One iteration = two handoffs; per_op is one. The goal is that N does not
// matter (N = 1000 within 2x of N = 0): parked threads must cost the dispatcher nothing.
void BM_SignalBlocked(benchmark::State& state) {
    const int bystanders = int(state.range(0));
    bench::runOnUserThread(state, kDriverCore, [&state, bystanders] {
        std::atomic<int> ready{0};
        std::atomic<bool> release{false};
        const std::vector<arbrt::ThreadId> parked = parkBystanders(bystanders, ready, release);
        if (int(parked.size()) != bystanders) {
            releaseBystanders(parked, release);
            state.SkipWithError("arbrt: cannot create the blocked threads");
            return;
        }
        SignalHandoff handoff;
        handoff.driver = arbrt::self();
        handoff.partner =
            arbrt::createThreadWith(pinnedTo(kDriverCore), [&handoff] { handoff.partnerLoop(); });
        if (handoff.partner) {
            for (auto _ : state) handoff.roundTrip();
            handoff.stop.store(true, std::memory_order_release);
            arbrt::signal(handoff.partner);
            arbrt::join(handoff.partner);
        } else {
            state.SkipWithError("arbrt: cannot create the partner thread");
        }
        releaseBystanders(parked, release);
        state.counters["blocked"] = double(bystanders);
        bench::reportPerOp(state, 2);
    });
}
BENCHMARK(BM_SignalBlocked)->Arg(0)->Arg(55)->Arg(1000)->UseRealTime();

}  // namespace
