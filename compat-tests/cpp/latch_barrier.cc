// latch_barrier: std::latch (count_down from many threads, wait, try_wait, arrive_and_wait) and
// std::barrier (completion function called exactly once per phase, before any thread of the
// phase continues; 300 phases with 6 threads; arrive_and_drop shrinks the expected count).
#include <atomic>
#include <barrier>
#include <latch>
#include <thread>
#include <vector>

#include "../common/compat.h"

int main() {
    compat_start("latch_barrier");
    constexpr int N = 6, PHASES = 300;
    std::latch start(N + 1), done(N);
    std::atomic<int> before{0};
    std::vector<std::thread> ts;
    for (int i = 0; i < N; i++)
        ts.emplace_back([&] {
            before++;
            start.arrive_and_wait();
            done.count_down();
        });
    CHECK(!start.try_wait(), "latch open too early");
    start.count_down();
    done.wait();
    CHECK(done.try_wait(), "latch not open after wait");
    CHECK_EQ(before.load(), N);
    for (auto& t : ts) t.join();
    ts.clear();

    // Barrier with a completion function.
    std::atomic<int> completions{0};
    std::atomic<int> arrivals{0};
    std::atomic<bool> bad{false};
    int phase_seen = 0;  // written only by the completion function
    auto on_done = [&]() noexcept {
        if (arrivals.load() != (phase_seen + 1) * N) bad = true;
        phase_seen++;
        completions++;
    };
    std::barrier bar(N, on_done);
    for (int i = 0; i < N; i++)
        ts.emplace_back([&] {
            for (int p = 0; p < PHASES; p++) {
                arrivals++;
                bar.arrive_and_wait();
                if (completions.load() < p + 1) bad = true;  // completion ran before release
            }
        });
    for (auto& t : ts) t.join();
    CHECK(!bad, "barrier completion ordering violated");
    CHECK_EQ(completions.load(), PHASES);
    ts.clear();

    // arrive_and_drop: half the threads leave after 10 phases.
    std::atomic<int> c2{0};
    auto on2 = [&]() noexcept { c2++; };
    std::barrier b2(N, on2);
    for (int i = 0; i < N; i++)
        ts.emplace_back([&, i] {
            for (int p = 0; p < 20; p++) {
                if (i % 2 && p == 10) {
                    b2.arrive_and_drop();
                    return;
                }
                b2.arrive_and_wait();
            }
        });
    for (auto& t : ts) t.join();
    CHECK_EQ(c2.load(), 20);
    return compat_ok();
}
