// exceptions: C++ exceptions inside threads — 8 threads each throw and catch 5,000 exceptions
// through several frames concurrently (the unwinder and its caches under concurrency);
// exception_ptr captured in worker threads and rethrown in main with the right type and
// message; nested exceptions; an exception thrown in one thread and caught in the same thread
// after blocking calls in between; std::thread whose function catches everything it throws.
#include <atomic>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../common/compat.h"

struct Custom {
    int code;
};

[[gnu::noinline]] static void thrower(int depth, int v) {
    if (depth == 0) {
        if (v % 3 == 0) throw std::runtime_error("rt" + std::to_string(v));
        if (v % 3 == 1) throw Custom{v};
        throw v;
    }
    thrower(depth - 1, v);
}

int main() {
    compat_start("exceptions");
    std::atomic<long> caught{0};
    std::vector<std::thread> ts;
    for (int i = 0; i < 8; i++)
        ts.emplace_back([&, i] {
            for (int k = 0; k < 5000; k++) {
                int v = i * 10000 + k;
                try {
                    thrower(k % 8, v);
                } catch (const std::runtime_error& e) {
                    if (e.what() == "rt" + std::to_string(v)) caught++;
                } catch (const Custom& c) {
                    if (c.code == v) caught++;
                } catch (int x) {
                    if (x == v) caught++;
                }
                if (k % 500 == 0) std::this_thread::yield();
            }
        });
    for (auto& t : ts) t.join();
    CHECK_EQ(caught.load(), 40000);

    // exception_ptr across threads.
    std::vector<std::exception_ptr> eps(6);
    ts.clear();
    for (int i = 0; i < 6; i++)
        ts.emplace_back([&, i] {
            try {
                if (i % 2) throw std::out_of_range("oor" + std::to_string(i));
                throw std::invalid_argument("ia" + std::to_string(i));
            } catch (...) {
                eps[i] = std::current_exception();
            }
        });
    for (auto& t : ts) t.join();
    for (int i = 0; i < 6; i++) {
        bool ok = false;
        try {
            std::rethrow_exception(eps[i]);
        } catch (const std::out_of_range& e) {
            ok = i % 2 && e.what() == "oor" + std::to_string(i);
        } catch (const std::invalid_argument& e) {
            ok = !(i % 2) && e.what() == "ia" + std::to_string(i);
        }
        CHECK(ok, "exception_ptr %d rethrown wrongly", i);
    }

    // Nested exceptions built in a thread, unpacked in main.
    std::exception_ptr nested;
    std::thread([&] {
        try {
            try {
                throw std::runtime_error("inner");
            } catch (...) {
                std::throw_with_nested(std::logic_error("outer"));
            }
        } catch (...) {
            nested = std::current_exception();
        }
    }).join();
    std::string chain;
    try {
        std::rethrow_exception(nested);
    } catch (const std::logic_error& e) {
        chain = e.what();
        try {
            std::rethrow_if_nested(e);
        } catch (const std::runtime_error& in) {
            chain += std::string("/") + in.what();
        }
    }
    CHECK(chain == "outer/inner", "nested chain '%s'", chain.c_str());

    // Exception in flight across blocking calls in the same thread.
    std::mutex m;
    std::thread([&] {
        try {
            std::lock_guard g(m);
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            throw Custom{5};
        } catch (const Custom& c) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            std::lock_guard g(m);
            CHECK_EQ(c.code, 5);
            CHECK(std::uncaught_exceptions() == 0, "uncaught_exceptions inside handler");
        }
    }).join();
    return compat_ok();
}
