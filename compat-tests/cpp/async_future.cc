// async_future: std::async(std::launch::async) runs each task in its own thread (16 at once,
// results gathered through futures); promise/future hand values and exceptions between threads;
// shared_future seen by 8 waiters; packaged_task run in another thread; future::wait_for returns
// timeout (never early) then ready; a deferred task runs in the calling thread.
#include <atomic>
#include <chrono>
#include <future>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "../common/compat.h"

using namespace std::chrono_literals;

int main() {
    compat_start("async_future");
    std::vector<std::future<std::pair<long, std::thread::id>>> fs;
    for (long i = 0; i < 16; i++)
        fs.push_back(std::async(std::launch::async, [i] {
            long s = 0;
            for (long k = 0; k <= i * 1000; k++) s += k;
            return std::make_pair(s, std::this_thread::get_id());
        }));
    std::set<std::thread::id> threads;
    for (long i = 0; i < 16; i++) {
        auto [s, id] = fs[i].get();
        CHECK_EQ(s, (i * 1000) * (i * 1000 + 1) / 2);
        CHECK(id != std::this_thread::get_id(), "launch::async ran in the caller");
        threads.insert(id);
    }

    // promise/future with a value and with an exception.
    std::promise<int> pv;
    std::future<int> fv = pv.get_future();
    std::thread t1([&] {
        std::this_thread::sleep_for(20ms);
        pv.set_value(99);
    });
    auto s0 = std::chrono::steady_clock::now();
    if (fv.wait_for(5ms) == std::future_status::timeout)
        CHECK(std::chrono::steady_clock::now() - s0 >= 5ms, "future::wait_for early");
    CHECK(fv.wait_for(20s) == std::future_status::ready, "future never became ready");
    CHECK_EQ(fv.get(), 99);
    t1.join();

    std::promise<void> pe;
    auto fe = pe.get_future();
    std::thread t2([&] {
        try {
            throw std::runtime_error("from thread");
        } catch (...) {
            pe.set_exception(std::current_exception());
        }
    });
    bool caught = false;
    try {
        fe.get();
    } catch (const std::runtime_error& e) {
        caught = std::string(e.what()) == "from thread";
    }
    CHECK(caught, "exception did not cross the future");
    t2.join();

    // An exception thrown inside std::async.
    auto fa = std::async(std::launch::async, []() -> int { throw std::logic_error("async"); });
    caught = false;
    try {
        fa.get();
    } catch (const std::logic_error&) {
        caught = true;
    }
    CHECK(caught, "exception from async lost");

    // shared_future with many waiters.
    std::promise<long> ps;
    std::shared_future<long> sf = ps.get_future().share();
    std::atomic<long> total{0};
    std::vector<std::thread> ws;
    for (int i = 0; i < 8; i++) ws.emplace_back([sf, &total] { total += sf.get(); });
    std::this_thread::sleep_for(5ms);
    ps.set_value(5);
    for (auto& w : ws) w.join();
    CHECK_EQ(total.load(), 40);

    // packaged_task.
    std::packaged_task<long(long)> task([](long x) { return x * x; });
    auto ft = task.get_future();
    std::thread t3(std::move(task), 12);
    CHECK_EQ(ft.get(), 144);
    t3.join();

    // Deferred: runs in the caller at get().
    auto fd = std::async(std::launch::deferred, [] { return std::this_thread::get_id(); });
    CHECK(fd.wait_for(0ms) == std::future_status::deferred, "deferred status");
    CHECK(fd.get() == std::this_thread::get_id(), "deferred task ran elsewhere");
    return compat_ok();
}
