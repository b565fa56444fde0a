// thread_local_dtor: thread_local objects with constructors and destructors — constructed lazily
// on first use in each thread, destroyed at thread exit in reverse order of construction (also
// for std::thread and pthread_exit), never for threads that did not use them; values are per
// thread; 200 threads x 2 objects counted exactly.
#include <pthread.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../common/compat.h"

static std::atomic<int> ctors{0}, dtors{0};
static std::mutex order_m;
static std::vector<std::string> order;  // guarded by order_m (only for the ordered thread)

struct Tracked {
    std::string name;
    bool record;
    explicit Tracked(std::string n, bool rec = false) : name(std::move(n)), record(rec) { ctors++; }
    ~Tracked() {
        dtors++;
        if (record) {
            std::lock_guard g(order_m);
            order.push_back(name);
        }
    }
};

thread_local Tracked tl_a("a");
static Tracked& tl_b() {
    thread_local Tracked b("b");
    return b;
}
thread_local int tl_plain = 5;

static void use_all() {
    tl_a.name += "";
    tl_b().name += "";
}

static void* pthread_exiter(void*) {
    use_all();
    pthread_exit(nullptr);
}

int main() {
    compat_start("thread_local_dtor");
    constexpr int N = 200;
    std::vector<std::thread> ts;
    for (int i = 0; i < N; i++) ts.emplace_back(use_all);
    for (auto& t : ts) t.join();
    CHECK_EQ(ctors.load(), 2 * N);
    CHECK_EQ(dtors.load(), 2 * N);

    // A thread that uses nothing constructs nothing.
    std::thread([] { tl_plain++; }).join();
    CHECK_EQ(ctors.load(), 2 * N);

    // pthread_exit runs thread_local destructors too.
    pthread_t pt;
    CHECK_RC(pthread_create(&pt, nullptr, pthread_exiter, nullptr), 0);
    compat_join(pt);
    CHECK_EQ(dtors.load(), 2 * N + 2);

    // Reverse order of construction.
    std::thread([] {
        thread_local Tracked first("first", true);
        thread_local Tracked second("second", true);
        thread_local Tracked third("third", true);
        (void)first;
        (void)second;
        (void)third;
    }).join();
    CHECK_EQ(order.size(), 3);
    CHECK(order[0] == "third" && order[1] == "second" && order[2] == "first",
          "destruction order %s %s %s", order[0].c_str(), order[1].c_str(), order[2].c_str());

    // Values are per thread.
    std::atomic<int> bad{0};
    ts.clear();
    for (int i = 0; i < 8; i++)
        ts.emplace_back([&, i] {
            tl_plain = i;
            std::this_thread::yield();
            for (int k = 0; k < 1000; k++) {
                if (tl_plain != i) bad++;
                if (k % 100 == 0) std::this_thread::yield();
            }
        });
    for (auto& t : ts) t.join();
    CHECK_EQ(bad.load(), 0);
    CHECK_EQ(tl_plain, 5);
    return compat_ok();
}
