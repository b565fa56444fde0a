// jthread_stop: std::jthread joins on destruction and requests stop; stop_token observed in a
// polling loop; stop_callback runs (in the requesting thread if registered before the request,
// at once if after); condition_variable_any::wait with a stop_token returns when stop is
// requested; request_stop returns true only the first time.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <thread>
#include <vector>

#include "../common/compat.h"

using namespace std::chrono_literals;

int main() {
    compat_start("jthread_stop");
    std::atomic<long> iterations{0};
    {
        std::jthread j([&](std::stop_token st) {
            while (!st.stop_requested()) {
                iterations++;
                std::this_thread::sleep_for(100us);
            }
        });
        std::this_thread::sleep_for(10ms);
    }  // destructor: request_stop + join
    CHECK(iterations > 0, "jthread never ran");

    // stop_callback runs once, in the requesting thread when registered before the request.
    std::atomic<int> cb_runs{0};
    std::thread::id cb_thread;
    std::jthread j2([](std::stop_token st) {
        std::mutex m;
        std::condition_variable_any cv;
        std::unique_lock lk(m);
        bool woke = cv.wait(lk, st, [] { return false; });
        CHECK(!woke && st.stop_requested(), "cv_any wait returned without stop");
    });
    std::stop_callback cb(j2.get_stop_token(), [&] {
        cb_runs++;
        cb_thread = std::this_thread::get_id();
    });
    std::this_thread::sleep_for(5ms);
    CHECK(j2.request_stop(), "first request_stop returned false");
    CHECK(!j2.request_stop(), "second request_stop returned true");
    j2.join();
    CHECK_EQ(cb_runs.load(), 1);
    CHECK(cb_thread == std::this_thread::get_id(), "stop_callback ran in another thread");

    // Registered after the request: runs immediately.
    int late = 0;
    std::stop_callback cb2(j2.get_stop_token(), [&] { late++; });
    CHECK_EQ(late, 1);

    // Many jthreads with cv_any waits on a shared condition and stop.
    std::mutex m;
    std::condition_variable_any cv;
    std::atomic<int> stopped{0};
    {
        std::vector<std::jthread> v;
        for (int i = 0; i < 8; i++)
            v.emplace_back([&](std::stop_token st) {
                std::unique_lock lk(m);
                cv.wait(lk, st, [] { return false; });
                stopped++;
            });
        std::this_thread::sleep_for(5ms);
    }
    CHECK_EQ(stopped.load(), 8);
    return compat_ok();
}
