// atomic_wait: C++20 std::atomic<T>::wait/notify_one/notify_all (libstdc++ uses raw futexes
// through syscall() and a waiter pool) — a 10,000-round ping-pong between two threads on one
// atomic<int>; 8 waiters released by notify_all; wait returns at once when the value already
// differs; atomic_flag::wait/notify; atomic<long> and atomic<bool> (non-futex-sized types go
// through the proxy pool).
#include <atomic>
#include <thread>
#include <vector>

#include "../common/compat.h"

int main() {
    compat_start("atomic_wait");
    std::atomic<int> turn{0};
    constexpr int ROUNDS = 10000;
    std::thread peer([&] {
        for (int i = 0; i < ROUNDS; i++) {
            turn.wait(2 * i);  // wait until it becomes odd
            turn.store(2 * i + 2);
            turn.notify_one();
        }
    });
    for (int i = 0; i < ROUNDS; i++) {
        turn.store(2 * i + 1);
        turn.notify_one();
        turn.wait(2 * i + 1);
    }
    peer.join();
    CHECK_EQ(turn.load(), 2 * ROUNDS);

    // Already different: returns at once.
    std::atomic<int> x{3};
    x.wait(4);

    // notify_all releases everyone.
    std::atomic<int> gate{0};
    std::atomic<int> passed{0};
    std::vector<std::thread> ts;
    for (int i = 0; i < 8; i++)
        ts.emplace_back([&] {
            gate.wait(0);
            passed++;
        });
    gate.store(1);
    gate.notify_all();
    for (auto& t : ts) t.join();
    CHECK_EQ(passed.load(), 8);

    // atomic_flag.
    std::atomic_flag f;
    std::thread ft([&] {
        f.wait(false);
        passed++;
    });
    f.test_and_set();
    f.notify_one();
    ft.join();
    CHECK_EQ(passed.load(), 9);

    // Wider and narrower types.
    std::atomic<long> big{0};
    std::atomic<bool> flag{false};
    std::thread bt([&] {
        for (long i = 0; i < 2000; i++) {
            big.wait(2 * i);
            big.store(2 * i + 2);
            big.notify_all();
        }
        flag.store(true);
        flag.notify_all();
    });
    for (long i = 0; i < 2000; i++) {
        big.store(2 * i + 1);
        big.notify_all();
        big.wait(2 * i + 1);
    }
    flag.wait(false);
    bt.join();
    CHECK_EQ(big.load(), 4000);
    return compat_ok();
}
