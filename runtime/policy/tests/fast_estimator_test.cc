// FastEstimator: checks every period, one more core as soon as a thread waits across two checks,
// idle cores back after the grace period, clamping. Period 10 us and grace 50 us unless a test
// says otherwise.
#include <gtest/gtest.h>

#include "arbrt/policy/fast_estimator.h"
#include "sim.h"
#include "trace.h"

namespace arbrt::policy {
namespace {

using testing::changes;
using testing::decisionPoints;
using testing::demandOf;
using testing::replay;
using testing::simulate;
using testing::traceOf;

// A 10 us period and a short (50 us) grace, so the traces stay short.
FastParams limits(uint32_t minCores, uint32_t maxCores) {
    FastParams p;
    p.limits = {minCores, maxCores};
    p.periodNs = 10'000;
    p.idleGraceNs = 50'000;
    return p;
}

// Two cores reached through one wait on core 0; core 1 then has nothing to do from 30 us.
constexpr const char* kSecondCoreGoesIdle = R"(
    +0          c0
    +10us       c0 busy=100% load=2 q=1              # a thread arrives and waits
    +10us       c0 busy=100% load=2 q=1 left=0       # 20 us: the same one still waits
    +10us       c0 busy=100%            c1 busy=100%  # 30 us: core 1 granted, queue drained
    +10us x8    c0 busy=100%            c1            # core 1 idle from 30 us
)";

TEST(FastEstimator, OnSample_ThreadWaitingAcrossTwoChecksAsksOneMoreCoreAtOnce) {
    FastEstimator fast(limits(1, 4));
    auto decisions = replay(fast, traceOf(R"(
        +0          c0
        +10us       c0 busy=100% load=2 q=1
        +10us       c0 busy=100% load=2 q=1 left=0
    )"));
    EXPECT_EQ(decisionPoints(decisions), "10us:1(steady) 20us:2(queuedAcrossChecks)");
    EXPECT_EQ(decisions.back().decision.coreId, 0);
    EXPECT_EQ(describe(decisions.back().decision),
              "1 -> 2 cores: a thread on core 0 waited across two checks (>= 10 us)");
}

TEST(FastEstimator, OnSample_QueueThatTurnsOverIsNotCongestion) {
    // A thread waits at every check, but never the same one: each has waited less than a period.
    FastEstimator fast(limits(1, 4));
    auto decisions = replay(fast, traceOf(R"(
        +0          c0
        +10us x5    c0 busy=100% load=2 q=1
    )"));
    EXPECT_EQ(changes(decisions, 1), "");
}

TEST(FastEstimator, OnSample_PartlyDrainedQueueStillCountsTheOneLeft) {
    FastEstimator fast(limits(1, 4));
    auto decisions = replay(fast, traceOf(R"(
        +0          c0
        +10us       c0 busy=100% load=3 q=2
        +10us       c0 busy=100% load=3 q=1 left=1
    )"));
    EXPECT_EQ(changes(decisions, 1), "20us:2(queuedAcrossChecks)");
}

TEST(FastEstimator, OnSample_LateArrivalsDoNotCountAsWaitingAcross) {
    // Everything queued at 10 us left; the two waiting at 20 us arrived after 10 us.
    FastEstimator fast(limits(1, 4));
    auto decisions = replay(fast, traceOf(R"(
        +0          c0
        +10us       c0 busy=100% load=2 q=1
        +10us       c0 busy=100% load=3 q=2 left=1
    )"));
    EXPECT_EQ(changes(decisions, 1), "");
}

TEST(FastEstimator, OnSample_SamplesBetweenChecksAreHeld) {
    FastEstimator fast(limits(1, 4));
    auto decisions = replay(fast, traceOf(R"(
        +0          c0
        +2us x20    c0 busy=100% load=2 q=1 left=0
    )"));
    // The thread queued by 2 us is seen at the check at 10 us and again at 20 us.
    EXPECT_EQ(decisionPoints(decisions),
              "10us:1(steady) 20us:2(queuedAcrossChecks) 30us:2(queuedAcrossChecks) "
              "40us:2(queuedAcrossChecks)");
    EXPECT_EQ(fast.nextDecisionNs(), 50'000u);
}

TEST(FastEstimator, OnSample_RequestInFlightIsRepeatedNotCompounded) {
    FastEstimator fast(limits(1, 8));
    auto decisions = replay(fast, traceOf(R"(
        +0          c0
        +10us x5    c0 busy=100% load=3 q=2 left=0
    )"));
    EXPECT_EQ(decisionPoints(decisions),
              "10us:1(steady) 20us:2(queuedAcrossChecks) 30us:2(queuedAcrossChecks) "
              "40us:2(queuedAcrossChecks) 50us:2(queuedAcrossChecks)");
}

TEST(FastEstimator, OnSample_ReactsWithinTwoPeriodsOfABurst) {
    // Light load, then three threads that compute: the first core comes two checks after the
    // burst starts, the next at the following check, as the queue keeps a waiting thread.
    FastEstimator fast(limits(1, 8));
    testing::SimResult r = simulate(fast, demandOf(R"(
        1ms   work=0.5
        1ms   work=3
    )"),
                                    10'000);
    EXPECT_EQ(r.grants, "1@0 2@1.02ms 3@1.03ms");
}

TEST(FastEstimator, OnSample_IdleCoreGivenBackAfterTheGrace) {
    FastEstimator fast(limits(1, 4));
    auto decisions = replay(fast, traceOf(kSecondCoreGoesIdle));
    EXPECT_EQ(changes(decisions, 1), "20us:2(queuedAcrossChecks) 80us:1(coreIdle)");
    EXPECT_EQ(describe(decisions[8].decision), "2 -> 1 cores: core 1 idle for 50 us (grace 50 us)");
    // While the release is in flight the same answer is repeated.
    EXPECT_EQ(decisions.back().decision,
              (Decision{1, 2, Reason::coreIdle, false, 1, 80'000, 50'000}));
}

TEST(FastEstimator, OnSample_ShortIdleGapsKeepTheCore) {
    FastEstimator fast(limits(1, 4));
    auto decisions = replay(fast, traceOf(R"(
        +0          c0
        +10us       c0 busy=100% load=2 q=1
        +10us       c0 busy=100% load=2 q=1 left=0
        +10us       c0 busy=100%  c1 busy=100%
        +10us x4    c0 busy=100%  c1
        +10us       c0 busy=100%  c1 busy=10%
        +10us x4    c0 busy=100%  c1
        +10us       c0 busy=100%  c1 busy=10%
    )"));
    EXPECT_EQ(changes(decisions, 1), "20us:2(queuedAcrossChecks)");
}

TEST(FastEstimator, OnSample_ArrivalKeepsACoreFromBeingIdle) {
    // Nothing ran on core 1, but a thread arrived (and was stolen before it ran there).
    FastEstimator fast(limits(1, 4));
    auto decisions = replay(fast, traceOf(R"(
        +0          c0
        +10us       c0 busy=100% load=2 q=1
        +10us       c0 busy=100% load=2 q=1 left=0
        +10us       c0 busy=100%  c1 busy=100%
        +10us x4    c0 busy=100%  c1
        +10us       c0 busy=100%  c1 q=1
        +10us x4    c0 busy=100%  c1
    )"));
    EXPECT_EQ(changes(decisions, 1), "20us:2(queuedAcrossChecks)");
}

TEST(FastEstimator, OnSample_IdleCoresGivenBackTogether) {
    FastEstimator fast(limits(1, 4));
    auto decisions = replay(fast, traceOf(R"(
        +0          c0
        +10us       c0 busy=100% load=2 q=1
        +10us       c0 busy=100% load=2 q=1 left=0                                  # 20us -> 2
        +10us       c0 busy=100% load=2 q=1 left=0  c1 busy=100%                    # 30us -> 3
        +10us       c0 busy=100% load=2 q=1 left=0  c1 busy=100%  c2 busy=100%      # 40us -> 4
        +10us       c0 busy=100%  c1 busy=100%  c2 busy=100%  c3 busy=100%
        +10us x6    c0 busy=100%  c1 busy=100%  c2            c3
    )"));
    EXPECT_EQ(changes(decisions, 1),
              "20us:2(queuedAcrossChecks) 30us:3(queuedAcrossChecks) 40us:4(queuedAcrossChecks) "
              "100us:2(coreIdle)");
    EXPECT_EQ(decisions.back().decision.coreId, 2);  // equally idle: the lower id is named
}

TEST(FastEstimator, OnSample_WaitingWithAnIdleCoreAsksNothing) {
    // At 50 us a thread has waited on core 0 while core 1 sat idle: core 1 could not take it, so
    // another core would not either. At 60 us core 1 is busy and the thread still waits: ask.
    FastEstimator fast(limits(1, 4));
    auto decisions = replay(fast, traceOf(R"(
        +0          c0
        +10us       c0 busy=100% load=2 q=1
        +10us       c0 busy=100% load=2 q=1 left=0
        +10us       c0 busy=100%                    c1 busy=100%
        +10us       c0 busy=100% load=2 q=1         c1
        +10us       c0 busy=100% load=2 q=1 left=0  c1
        +10us       c0 busy=100% load=2 q=1 left=0  c1 busy=100%
    )"));
    EXPECT_EQ(changes(decisions, 1), "20us:2(queuedAcrossChecks) 60us:3(queuedAcrossChecks)");
    EXPECT_EQ(decisions[5].decision.reason, Reason::steady);
}

TEST(FastEstimator, OnSample_IdleCoreThatCannotHelpIsGivenBackWhileThreadsWait) {
    // A thread pinned to core 0 waits there while core 1 has been idle past the grace: core 1 goes
    // back rather than drawing a third core that would idle too.
    FastEstimator fast(limits(1, 4));
    auto decisions = replay(fast, traceOf(R"(
        +0          c0
        +10us       c0 busy=100% load=2 q=1
        +10us       c0 busy=100% load=2 q=1 left=0
        +10us       c0 busy=100%                    c1 busy=100%
        +10us x5    c0 busy=100%                    c1
        +10us x3    c0 busy=100% load=2 q=1 left=0  c1
    )"));
    EXPECT_EQ(changes(decisions, 1), "20us:2(queuedAcrossChecks) 80us:1(coreIdle)");
    EXPECT_EQ(decisions.back().decision,
              (Decision{1, 2, Reason::coreIdle, false, 1, 80'000, 50'000}));
}

TEST(FastEstimator, OnSample_ClampedAtMaxAndAtMin) {
    FastEstimator atMax(limits(1, 1));
    EXPECT_EQ(decisionPoints(replay(atMax, traceOf(R"(
        +0          c0
        +10us x2    c0 busy=100% load=2 q=1 left=0
    )"))),
              "10us:1(steady) 20us:1(queuedAcrossChecks)!");
    FastEstimator atMin(limits(2, 4));
    auto decisions = replay(atMin, traceOf(R"(
        +0          c0  c1
        +10us x10   c0  c1
    )"));
    EXPECT_EQ(changes(decisions, 2), "");
    EXPECT_EQ(decisions.back().decision,
              (Decision{2, 2, Reason::coreIdle, true, 0, 100'000, 50'000}));
}

TEST(FastEstimator, OnSample_RegrantedCoreStartsItsIdleStreakAfresh) {
    FastEstimator fast(limits(1, 4));
    auto decisions = replay(fast, traceOf(R"(
        +0          c0
        +10us       c0 busy=100% load=2 q=1
        +10us       c0 busy=100% load=2 q=1 left=0
        +10us       c0 busy=100%  c1 busy=100%
        +10us x4    c0 busy=100%  c1
        +10us       c0 busy=100%                  # core 1 reclaimed for a check
        +10us x6    c0 busy=100%  c1
    )"));
    // Idle 30..70 us, away at 80 us, back at 90 us: idle again from 90 us, given back at 140 us.
    EXPECT_EQ(changes(decisions, 1), "20us:2(queuedAcrossChecks) 140us:1(coreIdle)");
}

TEST(FastEstimator, OnSample_LateCheckCountsTheWholeGap) {
    FastEstimator waiting(limits(1, 4));
    auto decisions = replay(waiting, traceOf(R"(
        +0          c0
        +10us       c0 busy=100% load=2 q=1
        +1ms        c0 busy=100% load=2 q=1 left=0
    )"));
    EXPECT_EQ(decisionPoints(decisions), "10us:1(steady) 1.01ms:2(queuedAcrossChecks)");
    EXPECT_EQ(decisions.back().decision.measured, 1'000'000);
    FastEstimator idle(limits(1, 4));
    decisions = replay(idle, traceOf(R"(
        +0          c0            c1
        +1ms        c0 busy=100%  c1
    )"));
    EXPECT_EQ(decisions.back().decision,
              (Decision{1, 2, Reason::coreIdle, false, 1, 1'000'000, 50'000}));
}

TEST(FastEstimator, OnSample_OlderSampleIsIgnored) {
    FastEstimator fast(limits(1, 4));
    testing::Trace trace = traceOf(R"(
        +0          c0
        +10us x3    c0 busy=100% load=2 q=1 left=0
    )");
    fast.onSample(trace.sample(0));
    fast.onSample(trace.sample(2));
    EXPECT_EQ(fast.onSample(trace.sample(1)), (Decision{1, 0, Reason::hold}));
    EXPECT_EQ(fast.onSample(trace.sample(3)).reason, Reason::queuedAcrossChecks);
}

}  // namespace
}  // namespace arbrt::policy
