// thread_pool: a typical C++ thread pool — 6 workers on a std::deque of std::function tasks under
// std::mutex + std::condition_variable, tasks returning std::future via packaged_task, tasks that
// submit further tasks, a parallel reduction over 1,000 chunks; shutdown joins every worker.
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include "../common/compat.h"

class Pool {
  public:
    explicit Pool(int n) {
        for (int i = 0; i < n; i++) workers_.emplace_back([this] { run(); });
    }
    ~Pool() {
        {
            std::lock_guard g(m_);
            stop_ = true;
        }
        cv_.notify_all();
        for (auto& w : workers_) w.join();
    }
    template <class F>
    auto submit(F f) -> std::future<decltype(f())> {
        auto task = std::make_shared<std::packaged_task<decltype(f())()>>(std::move(f));
        auto fut = task->get_future();
        {
            std::lock_guard g(m_);
            q_.emplace_back([task] { (*task)(); });
        }
        cv_.notify_one();
        return fut;
    }

  private:
    void run() {
        for (;;) {
            std::function<void()> job;
            {
                std::unique_lock lk(m_);
                cv_.wait(lk, [this] { return stop_ || !q_.empty(); });
                if (q_.empty()) return;
                job = std::move(q_.front());
                q_.pop_front();
            }
            job();
        }
    }
    std::mutex m_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> q_;  // guarded by m_
    bool stop_ = false;                    // guarded by m_
    std::vector<std::thread> workers_;
};

int main() {
    compat_start("thread_pool");
    std::vector<long> data(1000000);
    std::iota(data.begin(), data.end(), 1);
    long total = 0;
    {
        Pool pool(6);
        std::vector<std::future<long>> parts;
        for (size_t c = 0; c < 1000; c++)
            parts.push_back(pool.submit([&data, c] {
                return std::accumulate(data.begin() + (long)c * 1000,
                                       data.begin() + (long)(c + 1) * 1000, 0L);
            }));
        for (auto& f : parts) total += f.get();
        // Tasks submitting tasks (the outer one waits for its children: pool size is enough as
        // long as fewer outer tasks than workers wait at once).
        std::vector<std::future<long>> outers;
        for (int i = 0; i < 3; i++)
            outers.push_back(pool.submit([&pool, i] {
                auto a = pool.submit([i] { return (long)i * 10; });
                auto b = pool.submit([i] { return (long)i * 100; });
                return a.get() + b.get();
            }));
        long nested = 0;
        for (auto& f : outers) nested += f.get();
        CHECK_EQ(nested, 330);
    }
    CHECK_EQ(total, 1000000L * 1000001 / 2);
    return compat_ok();
}
