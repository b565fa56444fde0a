// The runtime in arbiter mode, against a scripted CoreProvider: cores run threads only while
// granted, a release request moves the core's threads away, and threads wait (not lost) while no
// core is granted. The real arbiter is exercised by arbiter/tests and the preload's end-to-end
// test.
#include <arbclient/core_provider.h>
#include <arbrt/arbrt.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "../preempt/workload.h"
#include "platform/arch.h"
#include "sched/context.h"
#include "sched/runtime_state.h"

namespace {

// Grants cpus on demand from the test; carriers block in blockUntilCoreAvailable until then. With
// `wakeups`, it also offers the arbiter's release wake-ups (fast release), as the real client does.
class ScriptedProvider : public arbclient::CoreProvider {
  public:
    explicit ScriptedProvider(bool wakeups = false) : wakeups_(wakeups) {}
    bool setRequestedCores(const std::array<uint32_t, arbclient::kPriorityLevels>& perPriority,
                           uint32_t minCores, uint32_t maxCores, std::string*) override {
        std::lock_guard<std::mutex> g(mu_);
        request_ = perPriority;
        min_ = minCores;
        max_ = maxCores;
        return true;
    }
    int blockUntilCoreAvailable() override {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return shutdown_ || !grants_.empty(); });
        if (shutdown_) return -1;
        const int cpu = grants_.front();
        grants_.pop_front();
        coreOfCpu_[cpu] = arbrt::currentCore();  // a carrier's dispatcher: its core index
        held_[cpu] = true;
        cv_.notify_all();
        return cpu;
    }
    bool mustReleaseCore(int cpu) const override { return release_[size_t(cpu)].load(); }
    void releaseCore(int cpu) override {
        std::lock_guard<std::mutex> g(mu_);
        release_[size_t(cpu)] = false;
        held_[cpu] = false;
        ++releases_;
        cv_.notify_all();
    }

    // Grants `cpu` and waits until a carrier runs threads on it; returns that carrier's runtime
    // core.
    int grant(int cpu) {
        int core;
        {
            std::unique_lock<std::mutex> l(mu_);
            grants_.push_back(cpu);
            cv_.notify_all();
            cv_.wait(l, [&] { return held_[cpu]; });
            core = coreOfCpu_[cpu];
        }
        // The carrier activates its core right after blockUntilCoreAvailable() returns.
        while (!arbrt::activeCores().test(size_t(core))) std::this_thread::yield();
        return core;
    }
    bool hasReleaseWakeups() const override { return wakeups_; }
    // The interrupt word is a futex the runtime wakes, which a condition variable cannot wait on:
    // looked at every millisecond instead (a test provider only).
    bool waitForReleaseRequests(uint32_t* seen, const std::atomic<uint32_t>& interrupt,
                                uint32_t interruptSeen, uint64_t timeoutNs) override {
        std::unique_lock<std::mutex> l(mu_);
        const auto deadline =
            std::chrono::steady_clock::now() +
            std::chrono::nanoseconds(std::min(timeoutNs, uint64_t{3'600'000'000'000}));
        while (!shutdown_ && releaseSeq_ == *seen && interrupt.load() == interruptSeen &&
               std::chrono::steady_clock::now() < deadline) {
            cv_.wait_for(l, std::chrono::milliseconds(1));
        }
        if (releaseSeq_ == *seen) return false;
        *seen = releaseSeq_;
        return true;
    }
    // Asks for `cpu` back and waits until the runtime has given it back.
    void reclaim(int cpu) {
        std::unique_lock<std::mutex> l(mu_);
        release_[size_t(cpu)] = true;
        ++releaseSeq_;
        cv_.notify_all();
        cv_.wait(l, [&] { return !held_[cpu]; });
    }
    void shutdown() {
        std::lock_guard<std::mutex> g(mu_);
        shutdown_ = true;
        cv_.notify_all();
    }
    std::array<uint32_t, arbclient::kPriorityLevels> request() {
        std::lock_guard<std::mutex> g(mu_);
        return request_;
    }
    uint32_t max() {
        std::lock_guard<std::mutex> g(mu_);
        return max_;
    }
    uint32_t min() {
        std::lock_guard<std::mutex> g(mu_);
        return min_;
    }

  private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<int> grants_;
    std::map<int, bool> held_;
    std::map<int, int> coreOfCpu_;
    std::array<std::atomic<bool>, 64> release_{};
    std::array<uint32_t, arbclient::kPriorityLevels> request_{};
    uint32_t min_ = 0, max_ = 0;
    int releases_ = 0;
    bool shutdown_ = false;
    const bool wakeups_;
    uint32_t releaseSeq_ = 0;
};

class ArbiterMode : public ::testing::Test {
  protected:
    void SetUp() override {
        arbrt::RuntimeOptions options;
        options.numCores = 2;
        options.coreProvider = &provider_;
        options.priority = 5;
        options.minCores = 1;
        ASSERT_FALSE(arbrt::start(options).has_value());
    }
    void TearDown() override {
        provider_.shutdown();
        EXPECT_TRUE(arbrt::stop());
    }
    ScriptedProvider provider_;
};

TEST_F(ArbiterMode, Start_RequestsAllCoresAtItsPriority) {
    const auto request = provider_.request();
    for (int p = 0; p < arbclient::kPriorityLevels; ++p)
        EXPECT_EQ(request[size_t(p)], p == 5 ? 2u : 0u);
    EXPECT_EQ(provider_.min(), 1u);
    EXPECT_EQ(provider_.max(), 2u);
    EXPECT_TRUE(arbrt::activeCores().none());
}

TEST_F(ArbiterMode, CreateBeforeGrant_RunsOnceGranted) {
    std::atomic<bool> ran{false};
    arbrt::ThreadId t = arbrt::createThread([&] { ran = true; });
    // No core is granted: the thread cannot have run (this cannot fail spuriously).
    for (int i = 0; i < 100000; ++i) ASSERT_FALSE(ran.load());
    const int core = provider_.grant(7);
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_TRUE(ran.load());
    EXPECT_TRUE(arbrt::activeCores().test(size_t(core)));
}

TEST_F(ArbiterMode, Reclaim_MovesThreadsToTheCoreStillGranted) {
    const int first = provider_.grant(3);
    const int second = provider_.grant(4);
    ASSERT_NE(first, second);
    std::atomic<bool> stop{false};
    std::atomic<int> onReleasedCore{0};
    std::atomic<bool> released{false};
    std::vector<arbrt::ThreadId> threads;
    for (int i = 0; i < 6; ++i) {
        threads.push_back(arbrt::createThread([&] {
            while (!stop.load()) {
                if (released.load() && arbrt::currentCore() == first) ++onReleasedCore;
                arbrt::yield();
            }
        }));
    }
    provider_.reclaim(3);
    released = true;
    EXPECT_FALSE(arbrt::activeCores().test(size_t(first)));
    EXPECT_TRUE(arbrt::activeCores().test(size_t(second)));
    // Every thread keeps running (on the remaining core) after the reclaim.
    std::atomic<int> checkedIn{0};
    arbrt::ThreadId probe = arbrt::createThread([&] { checkedIn = arbrt::currentCore() + 1; });
    EXPECT_EQ(arbrt::join(probe), 0);
    EXPECT_EQ(checkedIn.load(), second + 1);
    stop = true;
    for (auto t : threads) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(onReleasedCore.load(), 0);
}

TEST_F(ArbiterMode, ReclaimLastCore_ThreadsWaitAndFinishOnNextGrant) {
    provider_.grant(1);
    arbrt::Mutex mutex;
    arbrt::CondVar cv;
    bool go = false;
    int finished = 0;
    std::vector<arbrt::ThreadId> threads;
    for (int i = 0; i < 8; ++i) {
        threads.push_back(arbrt::createThread([&] {
            mutex.lock();
            while (!go) cv.wait(mutex);
            ++finished;
            mutex.unlock();
        }));
    }
    provider_.reclaim(1);
    EXPECT_TRUE(arbrt::activeCores().none());
    mutex.lock();
    go = true;
    cv.notifyAll();  // wakes threads that have no core to run on: they wait, nothing is lost
    mutex.unlock();
    provider_.grant(2);
    for (auto t : threads) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(finished, 8);
}

TEST_F(ArbiterMode, ReleaseCoreApi_IsTheArbitersJob) {
    EXPECT_EQ(arbrt::releaseCore(0), EPERM);
    EXPECT_EQ(arbrt::acquireCore(0), EPERM);
}

// Fast release: one granted core, whose only thread computes without calling anything (in a shared
// library: the runtime never preempts inside its own object, this test executable). Only the
// release watcher's preemption can give the core back; the time slice (1 s) never expires here.
class FastRelease : public ::testing::Test {
  protected:
    explicit FastRelease(uint64_t releaseDeferNs = arbrt::RuntimeOptions{}.releaseDeferNs)
        : releaseDeferNs_(releaseDeferNs) {}
    void SetUp() override {
        arbrt::RuntimeOptions options;
        options.numCores = 1;
        options.coreProvider = &provider_;
        options.preemptSignal = SIGURG;
        options.installPreemptHandler = true;
        options.timeSliceNs = 1'000'000'000;
        options.releaseDeferNs = releaseDeferNs_;
        ASSERT_FALSE(arbrt::start(options).has_value());
    }
    void TearDown() override {
        provider_.shutdown();
        EXPECT_TRUE(arbrt::stop());
    }
    // Starts a thread that computes in the preemptible workload library until stop_ is set, and
    // returns once it runs.
    arbrt::ThreadId startComputing() {
        std::atomic<bool> computing{false};
        const arbrt::ThreadId t = arbrt::createThread([&] {
            computing = true;
            preempt_workload::spinUntil(&stop_);
        });
        while (!computing.load()) std::this_thread::yield();
        return t;
    }
    // The thread was not lost with the released core: it finishes once another is granted.
    void finishOnANewCore(arbrt::ThreadId t) {
        stop_ = true;
        provider_.grant(6);
        EXPECT_EQ(arbrt::join(t), 0);
    }
    ScriptedProvider provider_{true};
    const uint64_t releaseDeferNs_;
    std::atomic<bool> stop_{false};
};

TEST_F(FastRelease, Reclaim_ComputingThreadGivesTheCoreBackAtOnce) {
    provider_.grant(5);
    const uint64_t before = arbrt::stats().preemptions;
    const arbrt::ThreadId t = startComputing();
    provider_.reclaim(5);  // hangs (test time-out) unless the computing thread is preempted
    EXPECT_TRUE(arbrt::activeCores().none());
    EXPECT_GE(arbrt::stats().preemptions, before + 1);
    finishOnANewCore(t);
}

// Barrier-aware release on one granted core. The rhythm-learning test runs real park cycles; the
// release tests give a computing thread a rhythm directly (its park rhythm is written only by the
// thread itself when it parks or resumes, which it does not while it computes), so what the
// watcher decides does not depend on how the host schedules the phases. The computing runs in
// the preemptible workload library, so only the watcher's choice keeps the thread from being
// preempted.
class BarrierAwareRelease : public FastRelease {
  protected:
    // A budget far above any scheduling delay of this host, so what the watcher decides depends on
    // the rhythm only (arbrun allows 5 ms; the runtime leaves that to its embedder).
    static constexpr uint64_t kBudgetNs = 200'000'000;
    BarrierAwareRelease() : FastRelease(kBudgetNs) {}
    // As if `t` had resumed from a park just now, after bursts of `burstNs` before each park.
    static void giveRhythm(arbrt::ThreadId t, uint64_t burstNs) {
        using namespace arbrt::detail;
        storeParkRhythm(&t.context->parkRhythm, {rdtsc(), ticksForNs(burstNs)});
    }
};

TEST_F(BarrierAwareRelease, ThreadThatParksRegularly_LearnsItsBursts) {
    provider_.grant(5);
    std::atomic<bool> learnt{false};
    const arbrt::ThreadId t = arbrt::createThread([&] {
        for (int i = 0; i < 5; ++i) {
            preempt_workload::spinFor(1'000'000);  // a phase: at least 1 ms
            arbrt::sleepFor(10'000);               // the barrier: parks
        }
        learnt = true;
        preempt_workload::spinUntil(&stop_);
    });
    while (!learnt.load()) std::this_thread::yield();
    const arbrt::detail::ParkRhythm r = arbrt::detail::loadParkRhythm(&t.context->parkRhythm);
    EXPECT_NE(r.resumeTsc, 0u) << "running since its last resume";
    EXPECT_GE(r.burstTicks, arbrt::detail::ticksForNs(1'000'000) * 9 / 10);
    stop_ = true;
    EXPECT_EQ(arbrt::join(t), 0);
}

// The core is asked back while the thread computes, 50 ms before its park is due (budget 200 ms,
// overdue at 100 ms): the watcher must wait, and once it does, the thread reaches its barrier and
// the core goes back there. The margins dwarf any scheduling delay on a loaded host.
TEST_F(BarrierAwareRelease, ParkExpectedWithinTheBudget_CoreGoesBackAtThePark) {
    provider_.grant(5);
    std::atomic<bool> computing{false}, reachBarrier{false}, reclaimed{false};
    const arbrt::ThreadId t = arbrt::createThread([&] {
        computing = true;
        preempt_workload::spinUntil(&reachBarrier);
        arbrt::sleepFor(10'000);  // parks: the dispatcher gives the core back here
        preempt_workload::spinUntil(&stop_);
    });
    while (!computing.load()) std::this_thread::yield();
    giveRhythm(t, 50'000'000);
    const arbrt::RuntimeStats before = arbrt::stats();
    std::thread reclaimer([&] {
        provider_.reclaim(5);
        reclaimed = true;
    });
    // Bounded poll until the watcher decides (not a sleep standing in for synchronisation).
    while (arbrt::stats().releasesAwaitingPark == before.releasesAwaitingPark && !reclaimed.load())
        std::this_thread::yield();
    reachBarrier = true;
    reclaimer.join();
    const arbrt::RuntimeStats after = arbrt::stats();
    EXPECT_TRUE(arbrt::activeCores().none());
    EXPECT_EQ(after.releasesAwaitingPark, before.releasesAwaitingPark + 1);
    EXPECT_EQ(after.preemptions, before.preemptions) << "preempted mid-phase";
    EXPECT_EQ(after.releasesPreemptedAfterWaiting, before.releasesPreemptedAfterWaiting);
    finishOnANewCore(t);
}

TEST_F(BarrierAwareRelease, ThreadThatStopsParking_IsPreemptedOnceOverdue) {
    provider_.grant(5);
    const arbrt::ThreadId t = startComputing();  // never parks again
    giveRhythm(t, 10'000'000);                   // it used to park every 10 ms: overdue at 20 ms
    const arbrt::RuntimeStats before = arbrt::stats();
    provider_.reclaim(5);  // hangs (test time-out) unless the thread is preempted after all
    const arbrt::RuntimeStats after = arbrt::stats();
    EXPECT_TRUE(arbrt::activeCores().none());
    EXPECT_GE(after.preemptions, before.preemptions + 1);
    // Whether the watcher first looked before the thread was overdue (20 ms) depends on the host;
    // any wait it started ended in a preemption.
    EXPECT_EQ(after.releasesAwaitingPark - before.releasesAwaitingPark,
              after.releasesPreemptedAfterWaiting - before.releasesPreemptedAfterWaiting);
    finishOnANewCore(t);
}

TEST_F(FastRelease, NeverParkedThread_IsPreemptedWithoutWaiting) {
    provider_.grant(5);
    const arbrt::ThreadId t = startComputing();
    const arbrt::RuntimeStats before = arbrt::stats();
    provider_.reclaim(5);
    const arbrt::RuntimeStats after = arbrt::stats();
    EXPECT_EQ(after.releasesAwaitingPark, before.releasesAwaitingPark);
    EXPECT_GE(after.preemptions, before.preemptions + 1);
    finishOnANewCore(t);
}

TEST(ArbiterModeOptions, ReleaseDeferAboveTheMaximum_IsRejected) {
    arbrt::RuntimeOptions options;
    options.releaseDeferNs = arbrt::kMaxReleaseDeferNs + 1;
    const auto error = arbrt::start(options);
    ASSERT_TRUE(error.has_value());
    EXPECT_NE(error->message.find("releaseDeferNs"), std::string::npos);
}

// A scripted estimator: records what it is fed and wants `wanted` cores from its third sample on.
class ScriptedEstimator : public arbrt::policy::CoreEstimator {
  public:
    arbrt::policy::Decision onSample(const arbrt::policy::CoreSample& sample) override {
        std::lock_guard<std::mutex> g(mu_);
        ++samples_;
        for (const auto& c : sample.cores) maxGrantedNs_ = std::max(maxGrantedNs_, c.grantedNs);
        arbrt::policy::Decision d;
        d.granted = uint32_t(sample.cores.size());
        d.cores = samples_ >= 3 ? wanted_.load() : 1;
        d.reason =
            samples_ >= 3 ? arbrt::policy::Reason::loadFactorHigh : arbrt::policy::Reason::hold;
        return d;
    }
    uint64_t nextDecisionNs() const override { return 0; }
    uint32_t wantedCores() const override { return 1; }
    std::string_view name() const override { return "scripted"; }

    std::atomic<uint32_t> wanted_{2};
    int samples() {
        std::lock_guard<std::mutex> g(mu_);
        return samples_;
    }
    uint64_t maxGrantedNs() {
        std::lock_guard<std::mutex> g(mu_);
        return maxGrantedNs_;
    }

  private:
    std::mutex mu_;
    int samples_ = 0;
    uint64_t maxGrantedNs_ = 0;
};

// The runtime in arbiter mode on a scripted provider, sampled for a scripted estimator; stopped
// (provider first) after each test.
class ArbiterModeEstimation : public ::testing::Test {
  protected:
    ::testing::AssertionResult start(int numCores, int priority) {
        arbrt::RuntimeOptions options;
        options.numCores = numCores;
        options.coreProvider = &provider;
        options.priority = priority;
        options.estimator = estimator;
        if (auto error = arbrt::start(options)) {
            return ::testing::AssertionFailure() << error->message;
        }
        started_ = true;
        return ::testing::AssertionSuccess();
    }
    void TearDown() override {
        provider.shutdown();
        if (started_) {
            EXPECT_TRUE(arbrt::stop());
        }
    }

    ScriptedProvider provider;
    std::shared_ptr<ScriptedEstimator> estimator = std::make_shared<ScriptedEstimator>();

  private:
    bool started_ = false;
};

// The estimator drives the request: the runtime starts by asking for the estimator's starting
// count (not every core), samples the granted cores on its monitor, and sends each new estimate.
TEST_F(ArbiterModeEstimation, Request_FollowsTheEstimate) {
    ASSERT_TRUE(start(4, 2));
    EXPECT_EQ(provider.request()[2], 1u) << "starts from the estimator's count";
    provider.grant(0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (provider.request()[2] != 2 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
    }
    EXPECT_EQ(provider.request()[2], 2u) << "the second estimate reached the arbiter";
    EXPECT_EQ(provider.max(), 4u);
    estimator->wanted_ = 3;
    while (provider.request()[2] != 3 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
    }
    EXPECT_EQ(provider.request()[2], 3u);
    EXPECT_GE(estimator->samples(), 3);
    // Granted time is integrated between samples while the core stays granted (samples come at
    // least every 5 ms).
    while (estimator->maxGrantedNs() == 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
    }
    EXPECT_GT(estimator->maxGrantedNs(), 0u);
}

// Spins (yielding) until pred() holds; false after a hang guard of 30 s (never the time a test
// expects to wait).
template <typename Pred>
bool eventually(Pred pred) {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!pred()) {
        if (std::chrono::steady_clock::now() > limit) return false;
        std::this_thread::yield();
    }
    return true;
}

// A request from (level, cores) pairs; unlisted levels ask for nothing.
std::array<uint32_t, arbclient::kPriorityLevels> levels(
    std::initializer_list<std::pair<int, uint32_t>> pairs) {
    std::array<uint32_t, arbclient::kPriorityLevels> out{};
    for (const auto& [level, cores] : pairs) out[size_t(level)] = cores;
    return out;
}

arbrt::ThreadAttributes withClass(arbrt::ThreadClass threadClass) {
    arbrt::ThreadAttributes attributes;
    attributes.threadClass = threadClass;
    return attributes;
}

// At the most cores it may hold, a process gains nothing from microsecond checks (no core to ask
// for), so the sampler keeps its quiet pace (1 ms) even while threads wait; an estimator that
// wants a decision at every instant (nextDecisionNs 0) would otherwise be sampled every monitor
// period (20 us).
TEST_F(ArbiterModeEstimation, AtTheMostCores_WaitingThreadsDoNotSpeedUpSampling) {
    estimator->wanted_ = 1;
    ASSERT_TRUE(start(1, 3));
    provider.grant(0);
    std::atomic<int> started{0};
    std::atomic<bool> stop{false};
    std::vector<arbrt::ThreadId> threads;
    for (int i = 0; i < 2; ++i) {  // one computes, the other waits for the only core
        threads.push_back(arbrt::createThread([&] {
            ++started;
            preempt_workload::spinUntil(&stop);
        }));
    }
    while (started.load() == 0) std::this_thread::yield();
    const int before = estimator->samples();
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // a span to count over, not sync
    const int taken = estimator->samples() - before;
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    EXPECT_LE(taken, 2 * ms + 3) << taken << " samples in " << ms << " ms";
    stop = true;
    for (const auto& t : threads) EXPECT_EQ(arbrt::join(t), 0);
}

// An idle process at the fewest cores it may hold gives its estimator nothing to decide until a
// core does something, so its monitor sleeps deep as in standalone mode (monitor_sleep_test.cc)
// instead of waking for every sample (1 to 5 ms: hundreds of wake-ups a second).
TEST_F(ArbiterModeEstimation, IdleAtTheFewestCores_MonitorSleepsDeep) {
    estimator->wanted_ = 1;
    ASSERT_TRUE(start(2, 3));
    provider.grant(0);
    auto& rt = *arbrt::detail::gRuntime;
    EXPECT_TRUE(eventually([&] { return rt.monitorDeepSleeps.load() > 0; }))
        << "the sampler kept an idle process's monitor awake";
}

// Above its fewest cores an idle process must be sampled at the estimator's pace: that is how
// its idle cores go back. Counted in samples, not time: no deep sleep begins while they come.
TEST_F(ArbiterModeEstimation, IdleAboveTheFewestCores_SamplingGoesOn) {
    estimator->wanted_ = 2;
    ASSERT_TRUE(start(2, 2));
    provider.grant(0);
    ASSERT_TRUE(eventually([&] { return provider.request()[2] == 2; }));
    provider.grant(1);
    // From here on both cores are granted and wanted: the process idles above its floor (1).
    const int from = estimator->samples();
    ASSERT_TRUE(eventually([&] { return estimator->samples() > from; }));
    auto& rt = *arbrt::detail::gRuntime;
    const uint64_t deepBefore = rt.monitorDeepSleeps.load();
    const int before = estimator->samples();
    ASSERT_TRUE(eventually([&] { return estimator->samples() >= before + 50; }));
    EXPECT_EQ(rt.monitorDeepSleeps.load(), deepBefore)
        << "the monitor slept deep while the estimator still had cores to give back";
}

TEST_F(ArbiterMode, BatchThreads_CoresOnlyTheyNeedRequestedOneLevelLower) {
    provider_.grant(1);
    arbrt::Semaphore release;
    std::vector<arbrt::ThreadId> threads;
    threads.push_back(arbrt::createThread([&] { release.wait(); }));
    for (int i = 0; i < 2; ++i) {
        threads.push_back(
            arbrt::createThreadWith(withClass(arbrt::ThreadClass::batch), [&] { release.wait(); }));
    }
    // One normal thread uses at most one core at level 5; the other core only batch threads
    // need: level 6 (core_request.h).
    EXPECT_TRUE(eventually([&] { return provider_.request() == levels({{5, 1}, {6, 1}}); }));
    EXPECT_EQ(provider_.max(), 2u);
    for (size_t i = 0; i < threads.size(); ++i) release.post();
    for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
    // No batch thread left: every core at the process's level again.
    EXPECT_TRUE(eventually([&] { return provider_.request() == levels({{5, 2}}); }));
}

TEST_F(ArbiterMode, ExclusiveThread_ReservesWhenASecondCoreIsGranted) {
    const int first = provider_.grant(3);
    std::atomic<bool> stop{false};
    bool fellBack = false;
    int err = 0;
    const arbrt::ThreadAttributes exclusive = withClass(arbrt::ThreadClass::exclusive);
    arbrt::detail::ThreadContext* context = arbrt::detail::allocateThread(exclusive, &err);
    ASSERT_NE(context, nullptr);
    arbrt::ThreadId t = arbrt::detail::launchThread(
        context, exclusive,
        [](void* raw) -> void* {
            while (!static_cast<std::atomic<bool>*>(raw)->load()) arbrt::yield();
            return nullptr;
        },
        &stop, &fellBack);
    // One granted core stays shared: no reservation yet.
    EXPECT_TRUE(fellBack);
    EXPECT_EQ(arbrt::reservedCoreOf(t), -1);
    const int second = provider_.grant(4);
    ASSERT_TRUE(eventually([&] { return arbrt::reservedCoreOf(t) >= 0; }));
    const int reserved = arbrt::reservedCoreOf(t);
    EXPECT_TRUE(reserved == first || reserved == second);
    // The arbiter takes the reserved core back: the reservation ends (one core must stay shared)
    // and the thread runs on, as normal, on the core still granted.
    provider_.reclaim(reserved == first ? 3 : 4);
    EXPECT_EQ(arbrt::reservedCoreOf(t), -1);
    std::atomic<int> ranOn{-1};
    arbrt::ThreadId probe = arbrt::createThread([&] { ranOn = arbrt::currentCore(); });
    EXPECT_EQ(arbrt::join(probe), 0);
    EXPECT_EQ(ranOn.load(), reserved == first ? second : first);
    stop = true;
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(arbrt::stats().exclusiveFallbacks, 2u);
    EXPECT_EQ(arbrt::stats().coresReserved, 1u);
}

TEST(ArbiterModeOptions, BadPriority_IsRejected) {
    ScriptedProvider provider;
    arbrt::RuntimeOptions options;
    options.numCores = 1;
    options.coreProvider = &provider;
    options.priority = 8;
    auto err = arbrt::start(options);
    ASSERT_TRUE(err.has_value());
    EXPECT_EQ(err->code, arbrt::Errc::invalidArgument);
}

}  // namespace
