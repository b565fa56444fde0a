// condvar_any: std::condition_variable_any with std::shared_mutex (exclusive lock), with
// std::recursive_mutex and with a user-defined lockable — wait with predicate, wait_for on
// steady_clock and wait_until on steady_clock and system_clock time out never early; a producer/
// consumer of 10,000 items over a condition_variable_any with exact sums.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "../common/compat.h"

using namespace std::chrono_literals;

// A minimal BasicLockable around std::mutex that counts lock calls.
struct CountingLock {
    std::mutex m;
    std::atomic<long> locks{0};
    void lock() {
        m.lock();
        locks++;
    }
    void unlock() { m.unlock(); }
};

template <class L>
static void timeouts(L& lockable, const char* what) {
    std::condition_variable_any cv;
    std::unique_lock lk(lockable);
    auto s0 = std::chrono::steady_clock::now();
    CHECK(!cv.wait_for(lk, 30ms, [] { return false; }), "%s: wait_for true", what);
    CHECK(std::chrono::steady_clock::now() - s0 >= 30ms, "%s: wait_for early", what);
    auto until = std::chrono::steady_clock::now() + 30ms;
    CHECK(!cv.wait_until(lk, until, [] { return false; }), "%s: wait_until(steady) true", what);
    CHECK(std::chrono::steady_clock::now() >= until, "%s: wait_until(steady) early", what);
    auto suntil = std::chrono::system_clock::now() + 30ms;
    while (cv.wait_until(lk, suntil) == std::cv_status::no_timeout) {
    }
    CHECK(std::chrono::system_clock::now() >= suntil, "%s: wait_until(system) early", what);
    CHECK(lk.owns_lock(), "%s: lock lost", what);
}

int main() {
    compat_start("condvar_any");
    std::shared_mutex sm;
    std::recursive_mutex rm;
    CountingLock cl;
    timeouts(sm, "shared_mutex");
    timeouts(rm, "recursive_mutex");
    timeouts(cl, "custom lockable");
    CHECK(cl.locks >= 3, "custom lock not used");

    // Producer/consumer over shared_mutex + condition_variable_any.
    std::condition_variable_any cv;
    std::deque<long> q;
    bool done = false;
    long consumed = 0;
    int consumers_left = 3;
    std::vector<std::thread> cs;
    for (int i = 0; i < 3; i++)
        cs.emplace_back([&] {
            long local = 0;
            for (;;) {
                std::unique_lock lk(sm);
                cv.wait(lk, [&] { return !q.empty() || done; });
                if (q.empty()) break;
                local += q.front();
                q.pop_front();
                cv.notify_all();
            }
            std::unique_lock lk(sm);
            consumed += local;
            consumers_left--;
        });
    std::thread p([&] {
        for (long i = 1; i <= 10000; i++) {
            std::unique_lock lk(sm);
            cv.wait(lk, [&] { return q.size() < 16; });
            q.push_back(i);
            cv.notify_all();
        }
        std::unique_lock lk(sm);
        done = true;
        cv.notify_all();
    });
    p.join();
    for (auto& t : cs) t.join();
    CHECK_EQ(consumed, 10000L * 10001 / 2);
    CHECK_EQ(consumers_left, 0);
    return compat_ok();
}
