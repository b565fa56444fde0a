// condvar: std::condition_variable — wait with a predicate, notify_one releasing one token at a
// time, notify_all releasing 12 waiters; wait_for (steady) and wait_until on steady_clock and
// system_clock returning cv_status::timeout never early with the lock held; predicate forms
// return false on timeout; a notify before a generous deadline wakes with no_timeout;
// notify_all_at_thread_exit.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "../common/compat.h"

using namespace std::chrono_literals;

int main() {
    compat_start("condvar");
    std::mutex m;
    std::condition_variable cv;

    // Timeouts.
    {
        std::unique_lock lk(m);
        auto s0 = std::chrono::steady_clock::now();
        // Spurious wake-ups are allowed: wait again for the rest of the 30 ms.
        while (cv.wait_for(lk, s0 + 30ms - std::chrono::steady_clock::now()) ==
               std::cv_status::no_timeout) {
        }
        CHECK(std::chrono::steady_clock::now() - s0 >= 30ms, "wait_for early");
        CHECK(lk.owns_lock(), "lock not held after wait_for");
        auto until = std::chrono::steady_clock::now() + 30ms;
        while (cv.wait_until(lk, until) == std::cv_status::no_timeout) {
        }
        CHECK(std::chrono::steady_clock::now() >= until, "wait_until(steady) early");
        auto suntil = std::chrono::system_clock::now() + 30ms;
        while (cv.wait_until(lk, suntil) == std::cv_status::no_timeout) {
        }
        CHECK(std::chrono::system_clock::now() >= suntil, "wait_until(system) early");
        CHECK(!cv.wait_for(lk, 20ms, [] { return false; }), "predicate wait_for returned true");
        CHECK(!cv.wait_until(lk, std::chrono::system_clock::now() + 20ms, [] { return false; }),
              "predicate wait_until(system) returned true");
    }

    // notify before a generous deadline.
    bool flag = false;
    std::thread n([&] {
        std::this_thread::sleep_for(20ms);
        std::lock_guard g(m);
        flag = true;
        cv.notify_one();
    });
    {
        std::unique_lock lk(m);
        CHECK(cv.wait_for(lk, 20s, [&] { return flag; }), "wait_for missed the notify");
    }
    n.join();
    flag = false;
    n = std::thread([&] {
        std::this_thread::sleep_for(20ms);
        std::lock_guard g(m);
        flag = true;
        cv.notify_all();
    });
    {
        std::unique_lock lk(m);
        CHECK(cv.wait_until(lk, std::chrono::system_clock::now() + 20s, [&] { return flag; }),
              "wait_until(system) missed the notify");
    }
    n.join();

    // notify_all releases all; notify_one one token at a time.
    constexpr int N = 12;
    int waiting = 0, go = 0, tokens = 0, taken = 0;
    std::vector<std::thread> ts;
    for (int i = 0; i < N; i++)
        ts.emplace_back([&] {
            std::unique_lock lk(m);
            waiting++;
            cv.notify_all();
            cv.wait(lk, [&] { return go; });
            cv.wait(lk, [&] { return tokens > 0; });
            tokens--;
            taken++;
            cv.notify_all();
        });
    {
        std::unique_lock lk(m);
        cv.wait(lk, [&] { return waiting == N; });
        go = 1;
        cv.notify_all();
    }
    for (int i = 0; i < N; i++) {
        std::unique_lock lk(m);
        tokens++;
        cv.notify_all();
        cv.wait(lk, [&] { return taken == i + 1; });
    }
    for (auto& t : ts) t.join();
    CHECK_EQ(taken, N);

    // notify_all_at_thread_exit.
    bool ready = false;
    std::thread e([&] {
        std::unique_lock lk(m);
        ready = true;
        std::notify_all_at_thread_exit(cv, std::move(lk));
    });
    {
        std::unique_lock lk(m);
        cv.wait(lk, [&] { return ready; });
    }
    e.join();
    return compat_ok();
}
