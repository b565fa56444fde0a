// std_thread: std::thread basics — construction with arguments (by value, by std::ref, move-only),
// join/joinable, detach, get_id uniqueness among live threads, hardware_concurrency > 0,
// this_thread::sleep_for / sleep_until (steady and system clocks, never early), yield, and
// moving thread objects into containers.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "../common/compat.h"

using namespace std::chrono_literals;

int main() {
    compat_start("std_thread");
    CHECK(std::thread::hardware_concurrency() > 0, "hardware_concurrency is 0");

    int value = 0;
    std::thread t([](int& v, int add) { v += add; }, std::ref(value), 41);
    CHECK(t.joinable(), "new thread not joinable");
    t.join();
    CHECK(!t.joinable(), "joined thread still joinable");
    CHECK_EQ(value, 41);

    auto p = std::make_unique<int>(7);
    int out = 0;
    std::thread mv([q = std::move(p), &out]() { out = *q * 6; });
    mv.join();
    CHECK_EQ(out, 42);

    // Ids of live threads are distinct and differ from main's.
    constexpr int N = 16;
    std::atomic<int> arrived{0};
    std::atomic<bool> go{false};
    std::vector<std::thread::id> ids(N);
    std::vector<std::thread> ts;
    for (int i = 0; i < N; i++)
        ts.emplace_back([&, i] {
            ids[i] = std::this_thread::get_id();
            arrived++;
            while (!go) std::this_thread::yield();
        });
    while (arrived < N) std::this_thread::yield();
    std::set<std::thread::id> uniq(ids.begin(), ids.end());
    CHECK_EQ(uniq.size(), N);
    CHECK(!uniq.count(std::this_thread::get_id()), "a thread shares main's id");
    for (int i = 0; i < N; i++) CHECK(ts[i].get_id() == ids[i], "get_id mismatch");
    go = true;
    for (auto& x : ts) x.join();

    // Detach: the thread finishes on its own.
    std::atomic<bool> done{false};
    std::thread d([&] { done = true; });
    d.detach();
    CHECK(!d.joinable(), "detached thread still joinable");
    auto give_up = std::chrono::steady_clock::now() + 20s;
    while (!done) {
        CHECK(std::chrono::steady_clock::now() < give_up, "detached thread never ran");
        std::this_thread::sleep_for(1ms);
    }

    // Sleeps never return early.
    auto s0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(30ms);
    CHECK(std::chrono::steady_clock::now() - s0 >= 30ms, "sleep_for early");
    auto until = std::chrono::steady_clock::now() + 30ms;
    std::this_thread::sleep_until(until);
    CHECK(std::chrono::steady_clock::now() >= until, "sleep_until(steady) early");
    auto suntil = std::chrono::system_clock::now() + 30ms;
    std::this_thread::sleep_until(suntil);
    CHECK(std::chrono::system_clock::now() >= suntil, "sleep_until(system) early");
    std::this_thread::sleep_for(0ms);
    std::this_thread::sleep_for(-5ms);

    // Threads created and joined in waves.
    long sum = 0;
    for (int wave = 0; wave < 50; wave++) {
        std::vector<std::thread> w;
        std::vector<long> r(8);
        for (int i = 0; i < 8; i++) w.emplace_back([&r, i, wave] { r[i] = i * wave; });
        for (auto& x : w) x.join();
        for (long v : r) sum += v;
    }
    CHECK_EQ(sum, 28L * (49 * 50 / 2));
    return compat_ok();
}
