// Cohort dispatch's policy (src/cohort.h): table tests of the pick and the cohort's bookkeeping,
// and a model run queue driven by seeded random and adversarial workloads, checking that cohorts
// are served FIFO, that nothing waits past the bounds, and that the scan stays within its window.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "sched/cohort.h"

namespace arbrt::detail {
namespace {

constexpr CohortBounds kBounds{4, 1'000};  // 4 threads, 1000 ticks

CohortState open(uint64_t key, uint32_t size, uint64_t start = 0) {
    return CohortState{key, resumeTag(key), size, start};
}

TEST(CohortLogic, ResumeTag_ZeroOnlyForZeroAndSmallValuesMapToThemselves) {
    EXPECT_EQ(resumeTag(0), 0);
    EXPECT_EQ(resumeTag(7), 7);
    EXPECT_EQ(resumeTag(0xffff), 0xffff);
    EXPECT_EQ(resumeTag(0x10001), 1);  // folds to 0: made non-zero
    EXPECT_NE(resumeTag(0x7f12'3456'789a), 0);
}

struct PickCase {
    const char* what;
    CohortState state;
    uint64_t now;
    std::vector<uint16_t> tags;
    int expected;
};

TEST(CohortLogic, ChooseCohortCandidate_Table) {
    const PickCase cases[] = {
        {"no cohort yet: FIFO", CohortState{}, 10, {0, 5, 5}, -1},
        {"first match wins", open(5, 1), 10, {3, 5, 5}, 1},
        {"head itself matches", open(5, 1), 10, {5, 3}, 0},
        {"no match: FIFO", open(5, 1), 10, {3, 4, 6}, -1},
        {"no candidates", open(5, 1), 10, {}, -1},
        {"size bound reached", open(5, 4), 10, {3, 5}, -1},
        {"one below the size bound", open(5, 3), 10, {3, 5}, 1},
        {"time bound reached", open(5, 1, 100), 1'100, {3, 5}, -1},
        {"one tick inside the time bound", open(5, 1, 100), 1'099, {3, 5}, 1},
        {"a zero tag never matches a closed key", open(0, 1), 10, {0, 0}, -1},
        {"last slot of the window", open(5, 1), 10, {1, 1, 1, 1, 1, 1, 1, 5}, kCohortScan - 1},
        {"beyond the window", open(5, 1), 10, {1, 1, 1, 1, 1, 1, 1, 1, 5}, -1},
    };
    for (const PickCase& c : cases) {
        EXPECT_EQ(chooseCohortCandidate(c.state, kBounds, c.now, c.tags.data(), int(c.tags.size())),
                  c.expected)
            << c.what;
    }
}

TEST(CohortLogic, CohortAfter_ContinuesGrowsAndRestarts) {
    CohortStep s = cohortAfter(CohortState{}, kBounds, 10, 5);
    EXPECT_FALSE(s.continued);
    EXPECT_EQ(s.state.key, 5u);
    EXPECT_EQ(s.state.size, 1u);
    EXPECT_EQ(s.state.startTsc, 10u);

    s = cohortAfter(s.state, kBounds, 20, 5);
    EXPECT_TRUE(s.continued);
    EXPECT_TRUE(s.formed);
    EXPECT_EQ(s.state.size, 2u);
    EXPECT_EQ(s.state.startTsc, 10u);  // a cohort's age counts from its first thread

    s = cohortAfter(s.state, kBounds, 30, 5);
    EXPECT_TRUE(s.continued);
    EXPECT_FALSE(s.formed);  // formed once, at two threads
    EXPECT_EQ(s.state.size, 3u);

    CohortStep other = cohortAfter(s.state, kBounds, 40, 6);
    EXPECT_FALSE(other.continued);
    EXPECT_EQ(other.state.key, 6u);
    EXPECT_EQ(other.state.size, 1u);
    EXPECT_EQ(other.state.startTsc, 40u);
}

TEST(CohortLogic, CohortAfter_SameKeyPastABoundBeginsANewCohort) {
    CohortStep full = cohortAfter(open(5, 4, 0), kBounds, 10, 5);
    EXPECT_FALSE(full.continued);
    EXPECT_EQ(full.state.size, 1u);
    EXPECT_EQ(full.state.startTsc, 10u);
    CohortStep old = cohortAfter(open(5, 1, 0), kBounds, 1'000, 5);
    EXPECT_FALSE(old.continued);
    EXPECT_EQ(old.state.startTsc, 1'000u);
}

TEST(CohortLogic, CohortAfter_UnknownResumePointNeverFormsACohort) {
    CohortStep s = cohortAfter(CohortState{}, kBounds, 1, 0);
    s = cohortAfter(s.state, kBounds, 2, 0);
    EXPECT_FALSE(s.continued);
    EXPECT_FALSE(cohortOpen(s.state, kBounds, 3));
}

TEST(CohortLogic, MaxThreadsOne_IsFifo) {
    const CohortBounds one{1, 1'000'000};
    CohortStep s = cohortAfter(CohortState{}, one, 1, 5);
    const uint16_t tags[] = {3, 5};
    EXPECT_EQ(chooseCohortCandidate(s.state, one, 2, tags, 2), -1);
}

// --- A model core: a FIFO run queue of threads, each parked at a resume point, picked by the
// policy exactly as cohort.cc does (the first kCohortScan threads are the candidates).

struct ModelThread {
    int id;
    uint64_t point;
    uint64_t enqueuedAt;  // pick count when it last joined the queue
};

struct ModelCore {
    explicit ModelCore(CohortBounds b) : bounds(b) {}
    CohortBounds bounds;
    CohortState cohort;
    std::deque<ModelThread> queue;
    uint64_t now = 0;    // ticks
    uint64_t picks = 0;  // picks so far
    uint64_t formed = 0, inCohorts = 0;
    // Invariant bookkeeping: the thread at the head and how many picks it has been passed over.
    int headId = -1;
    uint32_t headPassedOver = 0;
    uint32_t worstHeadPassedOver = 0;

    // One pick; returns the thread taken. Checks the invariants as it goes.
    ModelThread pick() {
        EXPECT_FALSE(queue.empty());
        uint16_t tags[kCohortScan];
        const int n = std::min<int>(kCohortScan, int(queue.size()));
        for (int i = 0; i < n; ++i) tags[i] = resumeTag(queue[size_t(i)].point);
        int i = chooseCohortCandidate(cohort, bounds, now, tags, n);
        EXPECT_LT(i, kCohortScan);
        if (i < 0) i = 0;  // the FIFO choice
        const ModelThread t = queue[size_t(i)];
        queue.erase(queue.begin() + i);
        const CohortStep step = cohortAfter(cohort, bounds, now, t.point);
        // FIFO among cohorts: a thread that begins a new cohort is the FIFO choice.
        if (!step.continued) {
            EXPECT_EQ(i, 0) << "a new cohort must begin at the queue's head";
        } else {
            EXPECT_EQ(t.point, cohort.key);
        }
        // The head's wait: passed over at most maxThreads - 1 times, and never once the cohort is
        // older than maxTicks.
        if (i == 0) {
            headId = -1;
        } else {
            const int head = queue.front().id;
            if (head != headId) {
                headId = head;
                headPassedOver = 0;
            }
            ++headPassedOver;
            EXPECT_LT(now - cohort.startTsc, bounds.maxTicks) << "passed over past the time bound";
            worstHeadPassedOver = std::max(worstHeadPassedOver, headPassedOver);
            EXPECT_LE(headPassedOver, bounds.maxThreads - 1) << "head starved";
        }
        if (step.formed) ++formed;
        if (step.continued) inCohorts += step.formed ? 2 : 1;
        cohort = step.state;
        ++picks;
        return t;
    }
};

// Random staged workload: threads cycle through `stages` resume points; after running, a thread
// re-joins the queue at its next stage (back of the queue), so stages interleave in the queue.
// Every thread must run within (position + 1) * maxThreads picks of joining the queue.
void runStaged(uint32_t seed, CohortBounds bounds, int threads, int stages, int steps,
               double* meanCohort) {
    std::mt19937 rng(seed);
    ModelCore core{bounds};
    std::vector<int> stageOf(size_t(threads), 0);
    std::vector<uint64_t> limit(size_t(threads), 0);
    for (int id = 0; id < threads; ++id) {
        stageOf[size_t(id)] = int(rng() % unsigned(stages));
        core.queue.push_back({id, uint64_t(0x400000 + 0x40 * stageOf[size_t(id)]), 0});
        limit[size_t(id)] = (uint64_t(id) + 1) * bounds.maxThreads;
    }
    for (int step = 0; step < steps; ++step) {
        const ModelThread t = core.pick();
        EXPECT_LE(core.picks, t.enqueuedAt + limit[size_t(t.id)])
            << "thread " << t.id << " waited past its bound, seed " << seed;
        core.now += 1 + rng() % 50;  // its run
        // It parks at its next stage and is woken later: back of the queue.
        stageOf[size_t(t.id)] = (stageOf[size_t(t.id)] + 1) % stages;
        const uint64_t point = uint64_t(0x400000 + 0x40 * stageOf[size_t(t.id)]);
        limit[size_t(t.id)] = (core.queue.size() + 1) * bounds.maxThreads;
        core.queue.push_back({t.id, point, core.picks});
        // Sometimes a wake-up order differs: swap two threads beyond the head (the queue is FIFO
        // by wake-up time, which the workload decides). Their bounds are recomputed.
        if (core.queue.size() > 3 && rng() % 4 == 0) {
            const size_t a = 1 + rng() % (core.queue.size() - 1);
            const size_t b = 1 + rng() % (core.queue.size() - 1);
            std::swap(core.queue[a], core.queue[b]);
            for (size_t k : {a, b}) {
                core.queue[k].enqueuedAt = core.picks;
                limit[size_t(core.queue[k].id)] = (k + 1) * bounds.maxThreads;
            }
        }
    }
    *meanCohort = core.formed ? double(core.inCohorts) / double(core.formed) : 0.0;
}

TEST(CohortLogic, StagedWorkload_NoStarvationAndCohortsForm_ManySeeds) {
    for (uint32_t seed = 1; seed <= 200; ++seed) {
        double mean = 0;
        runStaged(seed, CohortBounds{8, 1'000}, 24, 3, 2'000, &mean);
        EXPECT_GT(mean, 1.5) << "seed " << seed;
        if (HasFailure()) return;  // one seed's report is enough
    }
}

TEST(CohortLogic, StagedWorkload_TightTimeBoundStillFair_ManySeeds) {
    for (uint32_t seed = 1; seed <= 100; ++seed) {
        double mean = 0;
        runStaged(seed, CohortBounds{64, 60}, 40, 5, 2'000, &mean);
        if (HasFailure()) return;
    }
}

TEST(CohortLogic, StagedWorkload_MaxThreadsOneFormsNoCohort) {
    double mean = 0;
    runStaged(7, CohortBounds{1, 1'000'000}, 16, 3, 500, &mean);
    EXPECT_EQ(mean, 0.0);
}

// Adversary: every thread that runs comes straight back at the cohort's own resume point, and
// new ones keep arriving at it, so the cohort could go on forever; a thread of another stage
// waits at the head. It must run within maxThreads picks, whatever the seed.
TEST(CohortLogic, Adversary_EndlessCohortStillLetsTheHeadRun_ManySeeds) {
    for (uint32_t seed = 1; seed <= 200; ++seed) {
        std::mt19937 rng(seed);
        const uint32_t maxThreads = 2 + rng() % 15;
        ModelCore core{CohortBounds{maxThreads, ~uint64_t{0} >> 1}};
        constexpr uint64_t kHot = 0x1000, kCold = 0x2000;
        int nextId = 0;
        core.queue.push_back({nextId++, kHot, 0});
        core.queue.push_back({nextId++, kCold, 0});  // the victim, behind one hot thread
        for (int i = 0; i < 6; ++i) core.queue.push_back({nextId++, kHot, 0});
        const ModelThread first = core.pick();  // begins the hot cohort
        ASSERT_EQ(first.point, kHot);
        bool victimRan = false;
        for (uint32_t k = 0; k < maxThreads && !victimRan; ++k) {
            const ModelThread t = core.pick();
            victimRan = t.point == kCold;
            // Hot threads come back at once, and more arrive, ahead of the window's end.
            core.queue.insert(core.queue.begin() + std::min<size_t>(1, core.queue.size()),
                              {nextId++, kHot, core.picks});
            if (!victimRan) core.queue.push_back(t);
            ++core.now;
        }
        EXPECT_TRUE(victimRan) << "seed " << seed << " maxThreads " << maxThreads;
        if (HasFailure()) return;
    }
}

// Adversarial interleavings: random queues of random points, random bounds and clocks; the
// invariants of ModelCore::pick hold at every pick.
TEST(CohortLogic, RandomInterleavings_InvariantsHold_ManySeeds) {
    for (uint32_t seed = 1; seed <= 300; ++seed) {
        std::mt19937 rng(seed);
        ModelCore core{CohortBounds{1 + uint32_t(rng() % 12), 1 + uint64_t(rng() % 400)}};
        int nextId = 0;
        for (int step = 0; step < 1'000; ++step) {
            const int arrivals = int(rng() % 3);
            for (int a = 0; a < arrivals || core.queue.empty(); ++a) {
                core.queue.push_back({nextId++, uint64_t(rng() % 4), core.picks});  // 0: unknown
            }
            core.pick();
            core.now += rng() % 30;
        }
        EXPECT_LE(core.worstHeadPassedOver, core.bounds.maxThreads - 1);
        if (HasFailure()) return;
    }
}

}  // namespace
}  // namespace arbrt::detail
