// mutexes: std::mutex, recursive_mutex, timed_mutex and recursive_timed_mutex — exact counts under
// contention, try_lock false while held elsewhere, recursive depth, try_lock_for/try_lock_until
// (steady and system clocks) timing out never early while another thread holds the lock and
// succeeding when it is released; std::scoped_lock over two mutexes taken in opposite orders by
// different threads never deadlocks; std::lock with three mutexes.
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "../common/compat.h"

using namespace std::chrono_literals;

template <class M>
static void count_with(M& m, long& counter) {
    std::vector<std::thread> ts;
    for (int i = 0; i < 4; i++)
        ts.emplace_back([&] {
            for (int k = 0; k < 20000; k++) {
                std::lock_guard g(m);
                counter++;
            }
        });
    for (auto& t : ts) t.join();
}

// Another thread holds m until `release` is set.
template <class M>
struct Holder {
    M& m;
    std::atomic<bool> locked{false}, release{false};
    std::thread t;
    explicit Holder(M& mm)
        : m(mm), t([this] {
              m.lock();
              locked = true;
              while (!release) std::this_thread::sleep_for(1ms);
              m.unlock();
          }) {
        while (!locked) std::this_thread::sleep_for(1ms);
    }
    ~Holder() {
        release = true;
        t.join();
    }
};

template <class M>
static void timed_checks(M& m, const char* what) {
    {
        Holder<M> h(m);
        CHECK(!m.try_lock(), "%s: try_lock succeeded while held", what);
        auto s0 = std::chrono::steady_clock::now();
        CHECK(!m.try_lock_for(30ms), "%s: try_lock_for succeeded while held", what);
        CHECK(std::chrono::steady_clock::now() - s0 >= 30ms, "%s: try_lock_for early", what);
        auto until = std::chrono::steady_clock::now() + 30ms;
        CHECK(!m.try_lock_until(until), "%s: try_lock_until(steady) succeeded", what);
        CHECK(std::chrono::steady_clock::now() >= until, "%s: try_lock_until(steady) early", what);
        auto suntil = std::chrono::system_clock::now() + 30ms;
        CHECK(!m.try_lock_until(suntil), "%s: try_lock_until(system) succeeded", what);
        CHECK(std::chrono::system_clock::now() >= suntil, "%s: try_lock_until(system) early", what);
    }
    // Released in time.
    std::atomic<bool> locked{false};
    std::thread t([&] {
        m.lock();
        locked = true;
        std::this_thread::sleep_for(30ms);
        m.unlock();
    });
    while (!locked) std::this_thread::sleep_for(1ms);
    CHECK(m.try_lock_for(20s), "%s: try_lock_for failed although released", what);
    m.unlock();
    t.join();
}

int main() {
    compat_start("mutexes");
    std::mutex m;
    std::recursive_mutex rm;
    std::timed_mutex tm;
    std::recursive_timed_mutex rtm;
    long c1 = 0, c2 = 0, c3 = 0, c4 = 0;
    count_with(m, c1);
    count_with(rm, c2);
    count_with(tm, c3);
    count_with(rtm, c4);
    CHECK(c1 == 80000 && c2 == 80000 && c3 == 80000 && c4 == 80000, "counts %ld %ld %ld %ld", c1,
          c2, c3, c4);

    {
        Holder<std::mutex> h(m);
        CHECK(!m.try_lock(), "mutex try_lock succeeded while held");
    }
    CHECK(m.try_lock(), "mutex try_lock failed when free");
    m.unlock();

    for (int i = 0; i < 10; i++) rm.lock();
    CHECK(rm.try_lock(), "recursive try_lock by owner failed");
    bool other = true;
    std::thread([&] { other = rm.try_lock(); }).join();
    CHECK(!other, "recursive_mutex locked by another thread");
    for (int i = 0; i < 11; i++) rm.unlock();
    std::thread([&] {
        other = rm.try_lock();
        if (other) rm.unlock();
    }).join();
    CHECK(other, "recursive_mutex not free after full unlock");

    timed_checks(tm, "timed_mutex");
    timed_checks(rtm, "recursive_timed_mutex");

    // Opposite lock orders through scoped_lock and std::lock.
    std::mutex a, b, c;
    long pairs = 0;
    std::vector<std::thread> ts;
    for (int i = 0; i < 6; i++)
        ts.emplace_back([&, i] {
            for (int k = 0; k < 5000; k++) {
                if (i % 3 == 0) {
                    std::scoped_lock lk(a, b);
                    pairs++;
                } else if (i % 3 == 1) {
                    std::scoped_lock lk(b, a);
                    pairs++;
                } else {
                    std::unique_lock la(c, std::defer_lock), lb(b, std::defer_lock),
                        lc(a, std::defer_lock);
                    std::lock(la, lb, lc);
                    pairs++;
                }
            }
        });
    for (auto& t : ts) t.join();
    CHECK_EQ(pairs, 30000);
    return compat_ok();
}
