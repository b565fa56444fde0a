// The closed-loop simulator's model (sim.h), checked with an estimator that always wants the same
// count, so the counters it produces can be compared with the model by hand.
#include "sim.h"

#include <gtest/gtest.h>

namespace arbrt::policy::testing {
namespace {

// Wants `cores` always and records every sample it is given.
class FixedEstimator final : public CoreEstimator {
  public:
    explicit FixedEstimator(uint32_t cores) : cores_(cores) {}
    // Keeps a copy of the sample for the test to inspect.
    Decision onSample(const CoreSample& sample) override {
        samples.push_back({sample.nowNs, {sample.cores.begin(), sample.cores.end()}});
        return Decision{cores_, static_cast<uint32_t>(sample.cores.size()), Reason::steady};
    }
    uint64_t nextDecisionNs() const override { return 0; }
    uint32_t wantedCores() const override { return cores_; }
    std::string_view name() const override { return "fixed"; }

    std::vector<std::pair<uint64_t, std::vector<CoreCounters>>> samples;

  private:
    uint32_t cores_;
};

TEST(Simulate, Model_SpreadsWorkOverTheOccupiedCores) {
    FixedEstimator fixed(3);
    SimResult r = simulate(fixed, demandOf("1ms work=1.5 threads=1.8"), 1'000'000);
    ASSERT_EQ(fixed.samples.size(), 2u);
    const auto& [now, cores] = fixed.samples[1];
    EXPECT_EQ(now, 1'000'000u);
    ASSERT_EQ(cores.size(), 3u);
    // 1.8 runnable threads occupy two cores, each 75% busy with load 0.9; the third is idle and
    // nobody waits across checks (bursty queueing only).
    EXPECT_EQ(cores[0].busyNs, 750'000u);
    EXPECT_EQ(cores[1].busyNs, 750'000u);
    EXPECT_EQ(cores[2].busyNs, 0u);
    EXPECT_EQ(cores[0].runnableNs, 900'000u);
    EXPECT_EQ(cores[1].runnableNs, 900'000u);
    EXPECT_EQ(cores[2].runnableNs, 0u);
    for (const CoreCounters& c : cores) EXPECT_EQ(c.enqueued, 0u);
    EXPECT_DOUBLE_EQ(r.coreSeconds, 0.003);
    EXPECT_DOUBLE_EQ(r.unservedSeconds, 0);
    EXPECT_EQ(r.grants, "3@0");
}

TEST(Simulate, Model_SaturatedCoresHaveThreadsWaiting) {
    FixedEstimator fixed(2);
    simulate(fixed, demandOf("2ms work=3 threads=4.5\n1ms work=2.5"), 1'000'000);
    ASSERT_EQ(fixed.samples.size(), 4u);
    // 4.5 threads on 2 saturated cores: two wait, one per core, the same ones at the next sample.
    for (size_t i : {1, 2}) {
        for (const CoreCounters& c : fixed.samples[i].second) {
            EXPECT_EQ(c.busyNs, 1'000'000u * i);
            EXPECT_EQ(c.runnableNs, 2'250'000u * i);
            EXPECT_EQ(c.enqueued, 1u);
            EXPECT_EQ(c.dequeued, 0u);
        }
    }
    // 2.5 cores' worth on 2 cores: still saturated, so one thread waits (on core 0); core 1's
    // waiting thread left.
    const std::vector<CoreCounters>& last = fixed.samples[3].second;
    EXPECT_EQ(last[0].enqueued - last[0].dequeued, 1u);
    EXPECT_EQ(last[0].dequeued, 0u);
    EXPECT_EQ(last[1].enqueued - last[1].dequeued, 0u);
}

TEST(Simulate, Model_WorkBeyondTheCoresIsUnserved) {
    FixedEstimator fixed(2);
    SimResult r = simulate(fixed, demandOf("2ms work=3"), 1'000'000);
    EXPECT_DOUBLE_EQ(r.coreSeconds, 0.004);
    EXPECT_DOUBLE_EQ(r.unservedSeconds, 0.002);
    EXPECT_EQ(r.peakCores, 2u);
}

TEST(Simulate, ParseDemand_RepeatGroupsAndErrors) {
    std::string error;
    auto phases =
        parseDemand("repeat 2\n1ms work=1\n2ms work=2 threads=3 x2\nend\n5ms work=0", &error);
    ASSERT_TRUE(phases) << error;
    ASSERT_EQ(phases->size(), 7u);
    EXPECT_EQ((*phases)[1].durationNs, 2'000'000u);
    EXPECT_EQ((*phases)[1].threads, 3);
    EXPECT_EQ((*phases)[6].work, 0);
    EXPECT_FALSE(parseDemand("1ms work=2 threads=1", &error));
    EXPECT_EQ(error, "line 1: threads must be >= work (running ones count)");
    EXPECT_FALSE(parseDemand("1ms threads=1", &error));
    EXPECT_EQ(error, "line 1: a phase needs work=W");
    EXPECT_FALSE(parseDemand("end", &error));
    EXPECT_EQ(error, "line 1: end without repeat");
    EXPECT_FALSE(parseDemand("repeat 2\n1ms work=1", &error));
    EXPECT_EQ(error, "repeat without end");
    EXPECT_FALSE(parseDemand("1ms work=1 flux=2", &error));
    EXPECT_EQ(error, "line 1: 'flux=2' is not work=W, threads=R or xCOUNT");
}

TEST(Simulate, SimulateLoad_EveryGrantedCoreCarriesTheModelsLoad) {
    FixedEstimator fixed(2);
    const LoadModel model = [](uint32_t granted) { return CoreLoad{0.5 / granted, 0.75}; };
    SimResult r = simulateLoad(fixed, model, 2'000'000, 1'000'000);
    ASSERT_EQ(fixed.samples.size(), 3u);
    const auto& [now, cores] = fixed.samples[2];
    EXPECT_EQ(now, 2'000'000u);
    ASSERT_EQ(cores.size(), 2u);
    EXPECT_EQ(cores[1].grantedNs, 2'000'000u);
    EXPECT_EQ(cores[1].busyNs, 500'000u);
    EXPECT_EQ(cores[1].runnableNs, 1'500'000u);
    EXPECT_EQ(cores[1].enqueued, 0u);
    EXPECT_EQ(r.grants, "2@0");
    EXPECT_DOUBLE_EQ(r.coreSeconds, 0.004);
    EXPECT_DOUBLE_EQ(r.unservedSeconds, 0);
}

}  // namespace
}  // namespace arbrt::policy::testing
