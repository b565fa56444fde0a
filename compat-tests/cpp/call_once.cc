// call_once: std::call_once with 16 racing threads runs the callable exactly once and every
// caller sees its effect; if the first call throws, the flag stays unset and a later call runs
// again; function-local statics with a slow constructor are constructed exactly once under
// contention (the __cxa_guard futex path); std::once_flag per object in a vector.
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "../common/compat.h"

using namespace std::chrono_literals;

static std::atomic<int> constructed{0};

struct Slow {
    int value;
    Slow() : value(42) {
        constructed++;
        std::this_thread::sleep_for(20ms);
    }
};

static Slow& instance() {
    static Slow s;  // thread-safe static initialisation
    return s;
}

int main() {
    compat_start("call_once");
    std::once_flag flag;
    std::atomic<int> calls{0};
    int value = 0;
    std::vector<std::thread> ts;
    for (int i = 0; i < 16; i++)
        ts.emplace_back([&] {
            std::call_once(flag, [&] {
                calls++;
                std::this_thread::sleep_for(10ms);
                value = 7;
            });
            CHECK_EQ(value, 7);
        });
    for (auto& t : ts) t.join();
    CHECK_EQ(calls.load(), 1);

    // Exceptional first call.
    std::once_flag f2;
    int attempts = 0;
    for (int i = 0; i < 3; i++) {
        try {
            std::call_once(f2, [&] {
                attempts++;
                if (attempts < 3) throw std::runtime_error("retry");
            });
        } catch (const std::runtime_error&) {
        }
    }
    CHECK_EQ(attempts, 3);
    std::call_once(f2, [&] { attempts = 100; });
    CHECK_EQ(attempts, 3);

    // Function-local static under contention.
    ts.clear();
    std::atomic<long> sum{0};
    for (int i = 0; i < 16; i++) ts.emplace_back([&] { sum += instance().value; });
    for (auto& t : ts) t.join();
    CHECK_EQ(constructed.load(), 1);
    CHECK_EQ(sum.load(), 16 * 42);

    // Many flags.
    std::vector<std::once_flag> flags(1000);
    std::vector<std::atomic<int>> hits(1000);
    ts.clear();
    for (int i = 0; i < 4; i++)
        ts.emplace_back([&] {
            for (int k = 0; k < 1000; k++) std::call_once(flags[k], [&] { hits[k]++; });
        });
    for (auto& t : ts) t.join();
    for (int k = 0; k < 1000; k++) CHECK(hits[k] == 1, "flag %d ran %d times", k, hits[k].load());
    return compat_ok();
}
