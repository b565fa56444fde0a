// FastEstimator: checks every period, one more core as soon as a thread waits across two checks,
// idle cores back after the grace period (which learns from give-backs asked back soon), clamping.
// Period 10 us and grace 50 us unless a test says otherwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "arbrt/policy/fast_estimator.h"
#include "estimator_testing.h"

namespace arbrt::policy {
namespace {

using namespace testing;

// A 10 us period and a short (50 us) grace, so the traces stay short (utilisation window 200 us).
FastParams limits(uint32_t minCores, uint32_t maxCores) {
    return fastParams(minCores, maxCores, 50 * kUs);
}

// Two cores reached through one wait on core 0 (asked for at 20 us, granted at 30 us, both busy
// then); tests append what follows.
const std::string kGrowToTwo = R"(
    +0          c0
    +10us       c0 busy=100% load=2 q=1              # a thread arrives and waits
    +10us       c0 busy=100% load=2 q=1 left=0       # 20 us: the same one still waits
    +10us       c0 busy=100%            c1 busy=100%  # 30 us: core 1 granted, queue drained
)";

// Core 1 then has nothing to do from 30 us.
const std::string kSecondCoreGoesIdle = kGrowToTwo + "+10us x8 c0 busy=100% c1\n";

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
    EXPECT_EQ(changesOf(fast, R"(
        +0          c0
        +10us x5    c0 busy=100% load=2 q=1
    )"),
              "");
}

TEST(FastEstimator, OnSample_PartlyDrainedQueueStillCountsTheOneLeft) {
    FastEstimator fast(limits(1, 4));
    EXPECT_EQ(changesOf(fast, R"(
        +0          c0
        +10us       c0 busy=100% load=3 q=2
        +10us       c0 busy=100% load=3 q=1 left=1
    )"),
              "20us:2(queuedAcrossChecks)");
}

TEST(FastEstimator, OnSample_LateArrivalsDoNotCountAsWaitingAcross) {
    // Everything queued at 10 us left; the two waiting at 20 us arrived after 10 us.
    FastEstimator fast(limits(1, 4));
    EXPECT_EQ(changesOf(fast, R"(
        +0          c0
        +10us       c0 busy=100% load=2 q=1
        +10us       c0 busy=100% load=3 q=2 left=1
    )"),
              "");
}

TEST(FastEstimator, OnSample_SamplesBetweenChecksAreHeld) {
    FastEstimator fast(limits(1, 4));
    // The thread queued by 2 us is seen at the check at 10 us and again at 20 us.
    EXPECT_EQ(pointsOf(fast, R"(
        +0          c0
        +2us x20    c0 busy=100% load=2 q=1 left=0
    )"),
              "10us:1(steady) 20us:2(queuedAcrossChecks) 30us:2(queuedAcrossChecks) "
              "40us:2(queuedAcrossChecks)");
    EXPECT_EQ(fast.nextDecisionNs(), 50'000u);
}

TEST(FastEstimator, OnSample_RequestInFlightIsRepeatedNotCompounded) {
    FastEstimator fast(limits(1, 8));
    EXPECT_EQ(pointsOf(fast, R"(
        +0          c0
        +10us x5    c0 busy=100% load=3 q=2 left=0
    )"),
              "10us:1(steady) 20us:2(queuedAcrossChecks) 30us:2(queuedAcrossChecks) "
              "40us:2(queuedAcrossChecks) 50us:2(queuedAcrossChecks)");
}

TEST(FastEstimator, OnSample_ReactsWithinTwoPeriodsOfABurst) {
    // Light load, then three threads that compute: the first core comes two checks after the
    // burst starts, the next at the following check, as the queue keeps a waiting thread.
    FastEstimator fast(limits(1, 8));
    EXPECT_EQ(grantsOf(fast, R"(
        1ms   work=0.5
        1ms   work=3
    )",
                       10'000),
              "1@0 2@1.02ms 3@1.03ms");
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
    EXPECT_EQ(changesOf(fast, kGrowToTwo + R"(
        +10us x4    c0 busy=100%  c1
        +10us       c0 busy=100%  c1 busy=10%
        +10us x4    c0 busy=100%  c1
        +10us       c0 busy=100%  c1 busy=10%
    )"),
              "20us:2(queuedAcrossChecks)");
}

TEST(FastEstimator, OnSample_ArrivalKeepsACoreFromBeingIdle) {
    // Nothing ran on core 1, but a thread arrived (and was stolen before it ran there).
    FastEstimator fast(limits(1, 4));
    EXPECT_EQ(changesOf(fast, kGrowToTwo + R"(
        +10us x4    c0 busy=100%  c1
        +10us       c0 busy=100%  c1 q=1
        +10us x4    c0 busy=100%  c1
    )"),
              "20us:2(queuedAcrossChecks)");
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
    auto decisions = replay(fast, traceOf(kGrowToTwo + R"(
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
    auto decisions = replay(fast, traceOf(kGrowToTwo + R"(
        +10us x5    c0 busy=100%                    c1
        +10us x3    c0 busy=100% load=2 q=1 left=0  c1
    )"));
    EXPECT_EQ(changes(decisions, 1), "20us:2(queuedAcrossChecks) 80us:1(coreIdle)");
    EXPECT_EQ(decisions.back().decision,
              (Decision{1, 2, Reason::coreIdle, false, 1, 80'000, 50'000}));
}

// Requests every 80 us, alternately on core 0 and core 1, each running 48 us: both cores 30% busy
// and never idle for 250 us, `blocks` times 160 us, checked every 10 us.
std::string alternatingRequests(int blocks) {
    std::string trace = "+0 c0 c1\n";
    for (int i = 0; i < blocks; ++i) {
        trace += R"(
            +10us x4    c0 busy=100%  c1
            +10us       c0 busy=80%   c1
            +10us x3    c0            c1
            +10us x4    c0            c1 busy=100%
            +10us       c0            c1 busy=80%
            +10us x3    c0            c1
        )";
    }
    return trace;
}

TEST(FastEstimator, OnSample_FrequentShortRequestsAtLowUtilisationGiveBackACore) {
    // Defaults: 250 us grace, so a 1 ms utilisation window. Over its first millisecond the two
    // cores ran 0.616 cores of work: one core would run it at 62% (< 75%), and nobody waited.
    FastEstimator fast(fastParams(1, 4));
    auto decisions = replay(fast, traceOf(alternatingRequests(10)));
    EXPECT_EQ(changes(decisions, 2), "1ms:1(utilisationLow)");
    EXPECT_EQ(describe(decisions[100].decision),
              "2 -> 1 cores: utilisation with one core fewer 0.62 < 0.75");
}

TEST(FastEstimator, OnSample_UtilisationThatOneCoreCannotTakeKeepsBothCores) {
    // 40% on each core: one core would run 80% (not below 75%), so both stay.
    FastEstimator fast(limits(1, 4));
    EXPECT_EQ(changesOf(fast, R"(
        +0          c0            c1
        +10us x100  c0 busy=40%   c1 busy=40%
    )"),
              "");
}

TEST(FastEstimator, OnSample_QueueingAtLowUtilisationStillScalesUpAndKeepsItsCores) {
    // Two cores 30% busy, but every 100 us a thread waits across two checks on core 0: the fast
    // path asks for a third core at once, and the waits keep every window from giving one back.
    std::string trace = "+0 c0 c1\n";
    for (int i = 0; i < 6; ++i) {
        trace += R"(
            +10us x8    c0 busy=30%                     c1 busy=30%
            +10us       c0 busy=30% load=2 q=1          c1 busy=30%
            +10us       c0 busy=30% load=2 q=1 left=0   c1 busy=30%
        )";
    }
    FastEstimator fast(limits(1, 4));
    auto decisions = replay(fast, traceOf(trace));
    EXPECT_EQ(changes(decisions, 2), "100us:3(queuedAcrossChecks)");
    EXPECT_EQ(decisions.back().decision.reason, Reason::queuedAcrossChecks);
}

TEST(FastEstimator, OnSample_GiveBackFollowedByQueueingDoublesTheWindow) {
    // 50 us grace: 200 us window. Two cores at 30% give one back at 200 us; on one core a thread
    // then waits across two checks, so the core comes back at 220 us, within a window of the
    // give-back: the next give-back waits a 400 us window from the regrant at 230 us.
    FastEstimator fast(limits(1, 4));
    EXPECT_EQ(changesOf(fast, R"(
        +0          c0                            c1
        +10us x20   c0 busy=30%                   c1 busy=30%
        +10us       c0 busy=60% load=2 q=1
        +10us       c0 busy=60% load=2 q=1 left=0
        +10us x60   c0 busy=30%                   c1 busy=30%
    )"),
              "200us:1(utilisationLow) 220us:2(queuedAcrossChecks) 630us:1(utilisationLow)");
}

TEST(FastEstimator, OnSample_GiveBackThatHoldsHalvesTheWindowAgain) {
    // As above up to the give-back at 630 us; it then holds through its 400 us window (checked at
    // 1.04 ms), so the window is back to 200 us: after the next wait (a core asked at 1.1 ms,
    // granted at 1.11 ms) a core goes back at 1.31 ms, not 1.51 ms.
    FastEstimator fast(limits(1, 4));
    EXPECT_EQ(changesOf(fast, R"(
        +0          c0                            c1
        +10us x20   c0 busy=30%                   c1 busy=30%
        +10us       c0 busy=60% load=2 q=1
        +10us       c0 busy=60% load=2 q=1 left=0
        +10us x41   c0 busy=30%                   c1 busy=30%
        +10us x45   c0 busy=60%
        +10us       c0 busy=60% load=2 q=1
        +10us       c0 busy=60% load=2 q=1 left=0
        +10us x30   c0 busy=30%                   c1 busy=30%
    )"),
              "200us:1(utilisationLow) 220us:2(queuedAcrossChecks) 630us:1(utilisationLow) "
              "1.1ms:2(queuedAcrossChecks) 1.31ms:1(utilisationLow)");
}

// A thread waits on core 0 across two checks (a core asked for at the second), and core 1 is
// granted at the third.
const std::string kWaitThenRegrant = R"(
    +10us       c0 busy=100% load=2 q=1
    +10us       c0 busy=100% load=2 q=1 left=0
    +10us       c0 busy=100%  c1 busy=100%
)";

// Core 1 given back at 80 us (kSecondCoreGoesIdle), then a thread waits on core 0 across two
// checks: a core asked back at 100 us, within four graces of the give-back.
const std::string kGiveBackProvedWrong = kGrowToTwo + R"(
    +10us x5    c0 busy=100%  c1
    +10us       c0 busy=100% load=2 q=1
    +10us       c0 busy=100% load=2 q=1 left=0
)";

TEST(FastEstimator, OnSample_GraceGiveBackFollowedByQueueingDoublesTheGrace) {
    FastEstimator fast(limits(1, 4));
    // Regranted at 110 us and idle from there: back after the doubled grace, at 210 us, not 160.
    EXPECT_EQ(changesOf(fast, kGiveBackProvedWrong + R"(
        +10us       c0 busy=100%  c1 busy=100%
        +10us x12   c0 busy=100%  c1
    )"),
              "20us:2(queuedAcrossChecks) 80us:1(coreIdle) 100us:2(queuedAcrossChecks) "
              "210us:1(coreIdle)");
    EXPECT_EQ(fast.idleGraceNs(), 100 * kUs);
}

TEST(FastEstimator, OnSample_QueueingAfterTheTrialLeavesTheGrace) {
    // Core 1 given back at 80 us; the next wait comes 230 us later, after the give-back held for
    // four graces (judged at 290 us): the grace stays 50 us, and the regranted core goes back
    // after it.
    FastEstimator fast(limits(1, 4));
    EXPECT_EQ(changesOf(fast, kGrowToTwo + R"(
        +10us x5    c0 busy=100%  c1
        +10us x21   c0 busy=100%
    )" + kWaitThenRegrant + "+10us x5 c0 busy=100% c1\n"),
              "20us:2(queuedAcrossChecks) 80us:1(coreIdle) 310us:2(queuedAcrossChecks) "
              "370us:1(coreIdle)");
    EXPECT_EQ(fast.idleGraceNs(), 50 * kUs);
}

TEST(FastEstimator, OnSample_ScaleUpAtALateCheckPastTheTrialIsNotAWrongGiveBack) {
    // Doubled to 100 us and given back at 210 us as above; a thread waits at 220 us, and the next
    // check comes 500 us later (past the four-grace trial) and asks for a core: the give-back
    // held, so the grace halves to 50 us before that scale-up instead of doubling.
    FastEstimator fast(limits(1, 4));
    replay(fast, traceOf(kGiveBackProvedWrong + R"(
        +10us       c0 busy=100%  c1 busy=100%
        +10us x10   c0 busy=100%  c1
        +10us       c0 busy=100% load=2 q=1
        +500us      c0 busy=100% load=2 q=1 left=0
    )"));
    EXPECT_EQ(fast.wantedCores(), 2u);  // the scale-up was made
    EXPECT_EQ(fast.idleGraceNs(), 50 * kUs);
}

TEST(FastEstimator, OnSample_GraceGiveBackThatHoldsHalvesTheGraceAgain) {
    // Doubled to 100 us and given back at 210 us as above; the give-back then holds for four
    // graces (judged at 620 us), so the grace is 50 us again: after the next wait (a core asked
    // at 680 us, granted at 690 us) the core goes back at 740 us, not 790 us.
    FastEstimator fast(limits(1, 4));
    EXPECT_EQ(changesOf(fast, kGiveBackProvedWrong + R"(
        +10us       c0 busy=100%  c1 busy=100%
        +10us x10   c0 busy=100%  c1
        +10us x45   c0 busy=100%
    )" + kWaitThenRegrant + "+10us x6 c0 busy=100% c1\n"),
              "20us:2(queuedAcrossChecks) 80us:1(coreIdle) 100us:2(queuedAcrossChecks) "
              "210us:1(coreIdle) 680us:2(queuedAcrossChecks) 740us:1(coreIdle)");
    EXPECT_EQ(fast.idleGraceNs(), 50 * kUs);
}

TEST(FastEstimator, OnSample_GraceGrowsAtMostToItsCap) {
    // Core 1 handed back and forth nine times, each time asked for again 20 us after it went:
    // the grace doubles from 50 us to kMaxIdleGraceScale times that, and stays there.
    FastEstimator fast(limits(1, 4));
    std::string trace = kGrowToTwo;
    std::string expected = "20us:2(queuedAcrossChecks)";
    uint64_t nowUs = 30, graceUs = 50;
    for (int handOver = 0; handOver < 9; ++handOver) {
        std::ostringstream lines;
        lines << "+10us x" << graceUs / 10 << " c0 busy=100% c1\n" << kWaitThenRegrant;
        trace += lines.str();
        std::ostringstream points;
        points << " " << compactTime((nowUs + graceUs) * kUs) << ":1(coreIdle) "
               << compactTime((nowUs + graceUs + 20) * kUs) << ":2(queuedAcrossChecks)";
        expected += points.str();
        nowUs += graceUs + 30;  // the give-back, the ask 20 us later, the grant 10 us after
        graceUs = std::min<uint64_t>(2 * graceUs, kMaxIdleGraceScale * 50);
    }
    EXPECT_EQ(changesOf(fast, trace), expected);
    EXPECT_EQ(fast.idleGraceNs(), kMaxIdleGraceScale * 50 * kUs);
}

TEST(FastEstimator, OnSample_ClampedAtMaxAndAtMin) {
    FastEstimator atMax(limits(1, 1));
    EXPECT_EQ(pointsOf(atMax, R"(
        +0          c0
        +10us x2    c0 busy=100% load=2 q=1 left=0
    )"),
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
    // Idle 30..70 us, away at 80 us, back at 90 us: idle again from 90 us, given back at 140 us.
    EXPECT_EQ(changesOf(fast, kGrowToTwo + R"(
        +10us x4    c0 busy=100%  c1
        +10us       c0 busy=100%                  # core 1 reclaimed for a check
        +10us x6    c0 busy=100%  c1
    )"),
              "20us:2(queuedAcrossChecks) 140us:1(coreIdle)");
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
