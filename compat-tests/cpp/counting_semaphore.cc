// counting_semaphore: std::counting_semaphore bounds concurrency (at most 3 of 12 threads inside,
// observed maximum <= 3, every thread got in), try_acquire false at zero, try_acquire_for /
// try_acquire_until (steady and system clocks) time out never early and succeed after a release
// from another thread; std::binary_semaphore ping-pong 10,000 rounds; release(n) lets n through.
#include <atomic>
#include <chrono>
#include <semaphore>
#include <thread>
#include <vector>

#include "../common/compat.h"

using namespace std::chrono_literals;

int main() {
    compat_start("counting_semaphore");
    std::counting_semaphore<16> slots(3);
    std::atomic<int> inside{0}, max_inside{0}, entered{0};
    std::vector<std::thread> ts;
    for (int i = 0; i < 12; i++)
        ts.emplace_back([&] {
            for (int k = 0; k < 200; k++) {
                slots.acquire();
                int now = ++inside;
                int m = max_inside.load();
                while (now > m && !max_inside.compare_exchange_weak(m, now)) {
                }
                std::this_thread::yield();
                inside--;
                entered++;
                slots.release();
            }
        });
    for (auto& t : ts) t.join();
    CHECK(max_inside.load() <= 3 && max_inside.load() >= 1, "max inside %d", max_inside.load());
    CHECK_EQ(entered.load(), 2400);

    std::counting_semaphore<4> s(0);
    CHECK(!s.try_acquire(), "try_acquire at zero");
    auto s0 = std::chrono::steady_clock::now();
    CHECK(!s.try_acquire_for(30ms), "try_acquire_for succeeded");
    CHECK(std::chrono::steady_clock::now() - s0 >= 30ms, "try_acquire_for early");
    auto until = std::chrono::steady_clock::now() + 30ms;
    CHECK(!s.try_acquire_until(until), "try_acquire_until(steady) succeeded");
    CHECK(std::chrono::steady_clock::now() >= until, "try_acquire_until(steady) early");
    auto suntil = std::chrono::system_clock::now() + 30ms;
    CHECK(!s.try_acquire_until(suntil), "try_acquire_until(system) succeeded");
    CHECK(std::chrono::system_clock::now() >= suntil, "try_acquire_until(system) early");
    std::thread r([&] {
        std::this_thread::sleep_for(20ms);
        s.release(2);
    });
    CHECK(s.try_acquire_for(20s), "try_acquire_for missed the release");
    CHECK(s.try_acquire_until(std::chrono::system_clock::now() + 20s), "second unit missing");
    CHECK(!s.try_acquire(), "more units than released");
    r.join();

    std::binary_semaphore ping(0), pong(0);
    std::thread peer([&] {
        for (int i = 0; i < 10000; i++) {
            ping.acquire();
            pong.release();
        }
    });
    for (int i = 0; i < 10000; i++) {
        ping.release();
        pong.acquire();
    }
    peer.join();
    return compat_ok();
}
