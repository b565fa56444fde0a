// The text trace format of the tests (trace.h): counters, defaults, errors.
#include "trace.h"

#include <gtest/gtest.h>

namespace arbrt::policy::testing {
namespace {

// Parses text that must fail and returns the error.
std::string errorOf(std::string_view text) {
    std::string error;
    EXPECT_FALSE(parseTrace(text, &error)) << text;
    return error;
}

TEST(TraceText, ParseTrace_CountersAccumulatePerCoreAcrossLines) {
    std::string error;
    std::optional<Trace> t = parseTrace(R"(
        # a comment line
        +0                    c2
        +10us  c2 busy=50% load=2 q=3      # trailing comment
        +10us  c1 busy=100%  c2 q=1
    )",
                                        &error);
    ASSERT_TRUE(t) << error;
    ASSERT_EQ(t->size(), 3u);
    EXPECT_EQ(t->times, (std::vector<uint64_t>{0, 10'000, 20'000}));
    ASSERT_EQ(t->cores[1].size(), 1u);
    const CoreCounters& c2 = t->cores[1][0];
    EXPECT_EQ(c2.coreId, 2);
    EXPECT_EQ(c2.grantedNs, 10'000u);
    EXPECT_EQ(c2.busyNs, 5'000u);
    EXPECT_EQ(c2.runnableNs, 20'000u);
    EXPECT_EQ(c2.enqueued, 3u);
    EXPECT_EQ(c2.dequeued, 0u);
    ASSERT_EQ(t->cores[2].size(), 2u);
    const CoreCounters& c1 = t->cores[2][0];
    EXPECT_EQ(c1.busyNs, 10'000u);
    EXPECT_EQ(c1.runnableNs, 10'000u);  // load defaults to busy
    const CoreCounters& c2later = t->cores[2][1];
    EXPECT_EQ(c2later.grantedNs, 20'000u);
    EXPECT_EQ(c2later.dequeued, 3u);  // left defaults to everything that waited before
    EXPECT_EQ(c2later.enqueued, 4u);  // ... so the one waiting now is new
}

TEST(TraceText, ParseTrace_RepeatMakesSeparateSamples) {
    Trace t = traceOf("+0 c0\n+1ms x3 c0 busy=100% q=1 left=0");
    ASSERT_EQ(t.size(), 4u);
    EXPECT_EQ(t.times.back(), 3'000'000u);
    EXPECT_EQ(t.cores.back()[0].busyNs, 3'000'000u);
    EXPECT_EQ(t.cores.back()[0].enqueued, 1u);
    EXPECT_EQ(t.cores.back()[0].dequeued, 0u);
    CoreSample s = t.sample(2);
    EXPECT_EQ(s.nowNs, 2'000'000u);
    EXPECT_EQ(s.cores.size(), 1u);
}

TEST(TraceText, ParseTrace_NoCoresIsASampleWithNoCores) {
    Trace t = traceOf("+1s");
    ASSERT_EQ(t.size(), 1u);
    EXPECT_TRUE(t.cores[0].empty());
    EXPECT_EQ(t.times[0], 1'000'000'000u);
}

TEST(TraceText, ParseTrace_ErrorsNameTheLineAndWhatIsWrong) {
    EXPECT_EQ(errorOf("c0"), "line 1: a sample starts with +DURATION, got 'c0'");
    EXPECT_EQ(errorOf("\n+5 c0"), "line 2: '+5' is not a duration (+10us, +50ms, ...)");
    EXPECT_EQ(errorOf("+1ms x0 c0"), "line 1: 'x0' is not a repeat count (x3)");
    EXPECT_EQ(errorOf("+1ms busy=5%"), "line 1: 'busy=5%' before any core (cID)");
    EXPECT_EQ(errorOf("+1ms c256"), "line 1: 'c256' is not a core (c0..c255)");
    EXPECT_EQ(errorOf("+1ms c1 c1"), "line 1: core c1 listed twice");
    EXPECT_EQ(errorOf("+1ms c1 bsy=5%"),
              "line 1: unknown key 'bsy' (expected busy=, load=, q=, left=)");
    EXPECT_EQ(errorOf("+1ms c1 busy=5"), "line 1: busy needs a percentage, e.g. busy=40%");
    EXPECT_EQ(errorOf("+1ms c1 busy=120%"), "line 1: busy=120% is not 0%..100%");
    EXPECT_EQ(errorOf("+1ms c1 load=-1"), "line 1: load=-1 is not a number >= 0");
    EXPECT_EQ(errorOf("+1ms c1 q=x"), "line 1: q=x is not a count");
    EXPECT_EQ(errorOf("+1ms c1 busy"), "line 1: expected key=value after c1, got 'busy'");
    EXPECT_EQ(errorOf("+1ms c1 busy=50% load=0.4"), "line 1: load is below busy on c1");
    EXPECT_EQ(errorOf("+1ms c1 q=3\n+1ms c1 q=0 left=1"),
              "line 2: c1: q fell from 3 to 0, so at least 3 left");
}

TEST(TraceText, ParseDuration_UnitsAndFractions) {
    EXPECT_EQ(parseDuration("0"), 0u);
    EXPECT_EQ(parseDuration("7ns"), 7u);
    EXPECT_EQ(parseDuration("10us"), 10'000u);
    EXPECT_EQ(parseDuration("1.5ms"), 1'500'000u);
    EXPECT_EQ(parseDuration("2s"), 2'000'000'000u);
    EXPECT_FALSE(parseDuration("5"));
    EXPECT_FALSE(parseDuration("ms"));
    EXPECT_FALSE(parseDuration("5min"));
}

TEST(TraceText, CompactTime_ReadsLikeTheTraces) {
    EXPECT_EQ(compactTime(0), "0");
    EXPECT_EQ(compactTime(10'000), "10us");
    EXPECT_EQ(compactTime(1'020'000), "1.02ms");
    EXPECT_EQ(compactTime(50'000'000), "50ms");
    EXPECT_EQ(compactTime(1'752'000'000), "1.752s");
}

}  // namespace
}  // namespace arbrt::policy::testing
