// shared_mutex: std::shared_mutex lets 6 readers hold shared ownership at once (they meet while
// holding it), excludes readers while a writer holds it (try_lock_shared false) and writers while
// readers hold it (try_lock false); writers keep an invariant that concurrent readers check;
// std::shared_timed_mutex try_lock_for / try_lock_shared_until (steady and system clocks) time
// out never early.
#include <atomic>
#include <chrono>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "../common/compat.h"

using namespace std::chrono_literals;

int main() {
    compat_start("shared_mutex");
    std::shared_mutex sm;
    constexpr int R = 6;
    std::atomic<int> inside{0};
    std::atomic<bool> leave{false};
    std::vector<std::thread> rs;
    for (int i = 0; i < R; i++)
        rs.emplace_back([&] {
            std::shared_lock lk(sm);
            inside++;
            while (!leave) std::this_thread::sleep_for(1ms);
        });
    auto give_up = std::chrono::steady_clock::now() + 20s;
    while (inside < R) {
        CHECK(std::chrono::steady_clock::now() < give_up, "readers could not share: %d inside",
              inside.load());
        std::this_thread::sleep_for(1ms);
    }
    CHECK(!sm.try_lock(), "writer got in while readers held it");
    CHECK(sm.try_lock_shared(), "reader could not join other readers");
    sm.unlock_shared();
    leave = true;
    for (auto& t : rs) t.join();

    sm.lock();
    bool got = true;
    std::thread([&] {
        got = sm.try_lock_shared();
        if (got) sm.unlock_shared();
    }).join();
    CHECK(!got, "reader got in while a writer held it");
    sm.unlock();

    // Invariant: writers keep a == b.
    long a = 0, b = 0;
    std::atomic<bool> broken{false};
    std::vector<std::thread> ts;
    for (int i = 0; i < 6; i++)
        ts.emplace_back([&, i] {
            for (int k = 0; k < 5000; k++) {
                if (i < 2) {
                    std::unique_lock lk(sm);
                    a++;
                    std::this_thread::yield();
                    b++;
                } else {
                    std::shared_lock lk(sm);
                    if (a != b) broken = true;
                }
            }
        });
    for (auto& t : ts) t.join();
    CHECK(!broken, "reader saw a half-done write");
    CHECK(a == 10000 && b == 10000, "a %ld b %ld", a, b);

    // Timed variants.
    std::shared_timed_mutex stm;
    std::atomic<bool> held{false}, release{false};
    std::thread w([&] {
        stm.lock();
        held = true;
        while (!release) std::this_thread::sleep_for(1ms);
        stm.unlock();
    });
    while (!held) std::this_thread::sleep_for(1ms);
    auto s0 = std::chrono::steady_clock::now();
    CHECK(!stm.try_lock_for(30ms), "try_lock_for succeeded");
    CHECK(std::chrono::steady_clock::now() - s0 >= 30ms, "try_lock_for early");
    auto until = std::chrono::steady_clock::now() + 30ms;
    CHECK(!stm.try_lock_shared_until(until), "try_lock_shared_until succeeded");
    CHECK(std::chrono::steady_clock::now() >= until, "try_lock_shared_until(steady) early");
    auto suntil = std::chrono::system_clock::now() + 30ms;
    CHECK(!stm.try_lock_shared_until(suntil), "try_lock_shared_until(system) succeeded");
    CHECK(std::chrono::system_clock::now() >= suntil, "try_lock_shared_until(system) early");
    s0 = std::chrono::steady_clock::now();
    CHECK(!stm.try_lock_shared_for(30ms), "try_lock_shared_for succeeded");
    CHECK(std::chrono::steady_clock::now() - s0 >= 30ms, "try_lock_shared_for early");
    release = true;
    CHECK(stm.try_lock_shared_for(20s), "try_lock_shared_for failed after release");
    stm.unlock_shared();
    w.join();
    return compat_ok();
}
