// What teaches an idle core to poll (idle_spin.h): hand-offs between threads do; timers do not,
// nor does readiness (ThreadContext::eventWake). Each idle period here ends well within the poll
// budget (1 s), so only the kind of wake-up decides. The learner is the core's carrier's own
// state: it is read by a thread running on that core, on the same kernel thread, never racily.
#include <sys/epoll.h>
#include <unistd.h>

#include <thread>

#include "arbrt/io.h"
#include "sched/runtime_state.h"
#include "test_util.h"

namespace {

using arbrt::detail::IdleSpinLearner;
using arbrt_test::pinnedTo;

constexpr int kWakeups = 40;

class IdleSpin : public ::testing::Test {
  protected:
    void SetUp() override {
        arbrt::RuntimeOptions options;
        options.numCores = 2;
        options.idleSpinNs = 1'000'000'000;  // every gap is "short": the wake-up's kind decides
        const auto err = arbrt::start(options);
        ASSERT_FALSE(err.has_value()) << err->message;
        ASSERT_TRUE(arbrt_test::startEveryCarrier(2)) << "the carriers never all ran";
    }
    void TearDown() override { EXPECT_TRUE(arbrt::stop()) << "user threads still alive"; }

    // Core 0's learned score, read on core 0 by the calling thread (pinned there).
    static uint32_t coreZeroScore() { return arbrt::detail::gRuntime->cores[0].idleSpin.score(); }
};

TEST_F(IdleSpin, TimerWakeups_DoNotTeachTheCoreToPoll) {
    uint32_t score = IdleSpinLearner::kFull;
    arbrt::ThreadId sleeper = arbrt::createThreadWith(pinnedTo(0), [&] {
        for (int i = 0; i < kWakeups; ++i) arbrt::sleepFor(200'000);
        score = coreZeroScore();
    });
    ASSERT_EQ(arbrt::join(sleeper), 0);
    EXPECT_LT(score, IdleSpinLearner::kPollThreshold)
        << "periods ended by the sleeper's own timer were counted as hand-offs";
}

TEST_F(IdleSpin, HandOffs_KeepTheCorePolling) {
    arbrt::Mutex mutex;
    arbrt::CondVar toWaiter, toWaker;
    int turn = 0;  // odd: the waiter's turn; guarded by mutex
    uint32_t score = 0;
    // The waiter sleeps on core 0 and is woken from core 1 every round: core 0 goes idle, and the
    // work that ends its idle period is a thread another thread woke.
    arbrt::ThreadId waiter = arbrt::createThreadWith(pinnedTo(0), [&] {
        mutex.lock();
        for (int i = 0; i < kWakeups; ++i) {
            while (!(turn & 1)) toWaiter.wait(mutex);
            ++turn;
            toWaker.notifyOne();
        }
        mutex.unlock();
        score = coreZeroScore();
    });
    arbrt::ThreadId waker = arbrt::createThreadWith(pinnedTo(1), [&] {
        mutex.lock();
        for (int i = 0; i < kWakeups; ++i) {
            ++turn;
            toWaiter.notifyOne();
            while (turn & 1) toWaker.wait(mutex);
        }
        mutex.unlock();
    });
    ASSERT_EQ(arbrt::join(waker), 0);
    ASSERT_EQ(arbrt::join(waiter), 0);
    EXPECT_GE(score, IdleSpinLearner::kPollThreshold) << "hand-offs stopped core 0's poll";
}

TEST_F(IdleSpin, ReadinessWakeups_DoNotTeachTheCoreToPoll) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    std::atomic<int> consumed{0};
    uint32_t score = IdleSpinLearner::kFull;
    arbrt::ThreadId reader = arbrt::createThreadWith(pinnedTo(0), [&] {
        for (int i = 0; i < kWakeups; ++i) {
            arbrt::FdInterest interest{fds[0], EPOLLIN, 0};
            ASSERT_GT(arbrt::waitForFds(&interest, 1, arbrt::kWaitForever, nullptr), 0);
            char byte;
            ASSERT_EQ(read(fds[0], &byte, 1), 1);
            consumed.store(i + 1, std::memory_order_release);
        }
        score = coreZeroScore();
    });
    // A kernel thread outside the runtime writes one byte each time the last one was read.
    std::thread writer([&] {
        for (int i = 0; i < kWakeups; ++i) {
            while (consumed.load(std::memory_order_acquire) != i) std::this_thread::yield();
            ASSERT_EQ(write(fds[1], "x", 1), 1);
        }
    });
    writer.join();
    ASSERT_EQ(arbrt::join(reader), 0);
    close(fds[0]);
    close(fds[1]);
    EXPECT_LT(score, IdleSpinLearner::kPollThreshold) << "readiness taught core 0 to poll";
}

}  // namespace
