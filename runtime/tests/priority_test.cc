// Real-time priorities (ThreadAttributes::priority, setThreadPriority): within a core, runnable
// threads with a higher priority run before lower ones, and all of them before threads without one
// (runNext included); FIFO among equals; a yield still lets the next thread run; the API's errors.
#include <cerrno>
#include <mutex>
#include <string>
#include <vector>

#include "arbrt/embed/spin_lock.h"
#include "test_util.h"

namespace {

using arbrt_test::pinnedTo;

class Priority : public arbrt_test::RuntimeTest<2> {};

// The order in which threads ran, by label; threads of one core append one at a time, but the
// record is locked anyway (the driver reads it from another thread).
class RunOrder {
  public:
    void ran(char label) {
        std::lock_guard<arbrt::detail::SpinLock> guard(lock_);
        order_.push_back(label);
    }
    std::string str() {
        std::lock_guard<arbrt::detail::SpinLock> guard(lock_);
        return std::string(order_.begin(), order_.end());
    }

  private:
    arbrt::detail::SpinLock lock_;
    std::vector<char> order_;
};

// A thread pinned to core 0 with `priority`, which records `label` when it first runs.
arbrt::ThreadId spawnLabelled(RunOrder& order, char label, int priority) {
    arbrt::ThreadAttributes attributes = pinnedTo(0);
    attributes.priority = priority;
    return arbrt::createThreadWith(attributes, [&order, label] { order.ran(label); });
}

// The driver (no priority) makes them all runnable on its own core without switching, then
// blocks: the single-core argument (test_util.h) says they then run in the core's order. A thread
// without a priority sits in runNext, which must not go before the others.
TEST_F(Priority, CreatedTogether_HighestRunsFirstFifoAmongEquals) {
    RunOrder order;
    const arbrt::ThreadId driver = arbrt::createThreadWith(pinnedTo(0), [&] {
        std::vector<arbrt::ThreadId> threads = {
            spawnLabelled(order, 'n', 0),  spawnLabelled(order, 'l', 10),
            spawnLabelled(order, 'h', 90), spawnLabelled(order, 'm', 10),
            spawnLabelled(order, 'o', 0),  spawnLabelled(order, 'x', 99),
        };
        for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
    });
    ASSERT_EQ(arbrt::join(driver), 0);
    // Those without a priority follow in the core's usual order (runNext's rules, unchanged).
    const std::string ran = order.str();
    EXPECT_EQ(ran.substr(0, 4), "xhlm") << ran;
    EXPECT_TRUE(ran.substr(4) == "no" || ran.substr(4) == "on") << ran;
}

// Threads woken together (from a parked state) are ordered the same way: the woken ones without a
// priority go to runNext and the queue, the others to the real-time list.
TEST_F(Priority, WokenTogether_HighestRunsFirst) {
    RunOrder order;
    std::atomic<int> parked{0};
    arbrt::ThreadId threads[4];
    const int priorities[4] = {0, 5, 0, 50};
    const char labels[4] = {'a', 'b', 'c', 'd'};
    const arbrt::ThreadId driver = arbrt::createThreadWith(pinnedTo(0), [&] {
        for (int i = 0; i < 4; ++i) {
            arbrt::ThreadAttributes attributes = pinnedTo(0);
            attributes.priority = priorities[i];
            threads[i] = arbrt::createThreadWith(attributes, [&, i] {
                parked.fetch_add(1);
                arbrt::block();  // a spurious return is impossible here: one signal each
                order.ran(labels[i]);
            });
        }
        while (parked.load() < 4) arbrt::yield();  // every thread is parked (or parking)
        arbrt::yield();
        for (arbrt::ThreadId t : threads) arbrt::signal(t);
        for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
    });
    ASSERT_EQ(arbrt::join(driver), 0);
    const std::string ran = order.str();
    EXPECT_EQ(ran.substr(0, 2), "db") << ran;
    EXPECT_TRUE(ran.substr(2) == "ac" || ran.substr(2) == "ca") << ran;
}

// A change of priority counts from the thread's next wake-up.
TEST_F(Priority, SetThreadPriority_AppliesAtNextWakeup) {
    RunOrder order;
    std::atomic<int> parked{0};
    arbrt::ThreadId a, b;
    const arbrt::ThreadId driver = arbrt::createThreadWith(pinnedTo(0), [&] {
        a = arbrt::createThreadWith(pinnedTo(0), [&] {
            parked.fetch_add(1);
            arbrt::block();
            order.ran('a');
        });
        b = arbrt::createThreadWith(pinnedTo(0), [&] {
            parked.fetch_add(1);
            arbrt::block();
            order.ran('b');
        });
        while (parked.load() < 2) arbrt::yield();
        arbrt::yield();
        EXPECT_EQ(arbrt::threadPriority(b), 0);
        EXPECT_EQ(arbrt::setThreadPriority(b, 1), 0);
        EXPECT_EQ(arbrt::threadPriority(b), 1);
        arbrt::signal(a);
        arbrt::signal(b);
        EXPECT_EQ(arbrt::join(a), 0);
        EXPECT_EQ(arbrt::join(b), 0);
    });
    ASSERT_EQ(arbrt::join(driver), 0);
    EXPECT_EQ(order.str(), "ba");
}

// A yield by a thread with a priority lets a waiting thread without one run (programs spin on
// yields for threads that natively run on another CPU), and the yielder runs again next.
TEST_F(Priority, Yield_LetsLowerPriorityThreadRun) {
    RunOrder order;
    std::atomic<bool> lowRan{false};
    arbrt::ThreadAttributes high = pinnedTo(0);
    high.priority = 20;
    const arbrt::ThreadId driver = arbrt::createThreadWith(high, [&] {
        const arbrt::ThreadId low = arbrt::createThreadWith(pinnedTo(0), [&] {
            order.ran('l');
            lowRan = true;
        });
        order.ran('h');
        while (!lowRan.load()) arbrt::yield();
        order.ran('h');
        EXPECT_EQ(arbrt::join(low), 0);
    });
    ASSERT_EQ(arbrt::join(driver), 0);
    EXPECT_EQ(order.str(), "hlh");
}

TEST_F(Priority, Errors) {
    arbrt::ThreadAttributes attributes;
    int err = 0;
    attributes.priority = arbrt::kMaxPriority + 1;
    EXPECT_FALSE(arbrt::spawn(
        attributes, [](void*) -> void* { return nullptr; }, nullptr, &err));
    EXPECT_EQ(err, EINVAL);
    attributes.priority = -1;
    EXPECT_FALSE(arbrt::spawn(
        attributes, [](void*) -> void* { return nullptr; }, nullptr, &err));
    EXPECT_EQ(err, EINVAL);

    arbrt::Semaphore release;
    const arbrt::ThreadId t = arbrt::createThread([&] { release.wait(); });
    EXPECT_EQ(arbrt::setThreadPriority(t, arbrt::kMaxPriority + 1), EINVAL);
    EXPECT_EQ(arbrt::setThreadPriority(t, -1), EINVAL);
    EXPECT_EQ(arbrt::setThreadPriority(t, arbrt::kMaxPriority), 0);
    EXPECT_EQ(arbrt::threadPriority(t), arbrt::kMaxPriority);
    release.post();
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(arbrt::setThreadPriority(t, 1), ESRCH);
    EXPECT_EQ(arbrt::threadPriority(t), -1);
    EXPECT_EQ(arbrt::setThreadPriority(arbrt::ThreadId{}, 1), ESRCH);
}

}  // namespace
