// arbrun ab's statistics and report text: medians, ratios, units, run labels, mismatch lines and
// the whole table, from hand-made samples (no processes).
#include <gtest/gtest.h>
#include <signal.h>

#include "ab_report.h"

namespace arbrun {
namespace {

// A wait status as wait4 reports it, for exit(code) and for death by a signal.
int exited(int code) {
    return code << 8;
}
int killedBy(int signal) {
    return signal;
}

RunSample sample(RunMode mode, int64_t wallNs, int64_t cpuNs, long rssKiB, int status = 0,
                 bool stdoutMatches = true) {
    RunSample r;
    r.mode = mode;
    r.wallNs = wallNs;
    r.cpuNs = cpuNs;
    r.maxRssKiB = rssKiB;
    r.waitStatus = status;
    r.stdoutMatches = stdoutMatches;
    return r;
}

constexpr RunMode kNative = RunMode::native;
constexpr RunMode kArbrun = RunMode::arbrun;

TEST(Median, OddCountIsTheMiddleValue) {
    EXPECT_EQ(median({5}), 5);
    EXPECT_EQ(median({9, 1, 5}), 5);
    EXPECT_EQ(median({7, 7, 1, 100, 3}), 7);
}

TEST(Median, EvenCountIsTheMeanOfTheMiddleTwo) {
    EXPECT_EQ(median({4, 2}), 3);
    EXPECT_EQ(median({10, 1, 4, 3}), 3.5);
    EXPECT_EQ(median({2, 2, 2, 2}), 2);
}

TEST(Median, EmptyIsZero) {
    EXPECT_EQ(median({}), 0);
}

TEST(FormatRatio, TwoDecimalsWithX) {
    EXPECT_EQ(formatRatio(118, 100), "1.18x");
    EXPECT_EQ(formatRatio(1, 3), "0.33x");
    EXPECT_EQ(formatRatio(5, 5), "1.00x");
    EXPECT_EQ(formatRatio(0, 5), "0.00x");
}

TEST(FormatRatio, ZeroNativeIsNotApplicable) {
    EXPECT_EQ(formatRatio(10, 0), "n/a");
    EXPECT_EQ(formatRatio(0, 0), "n/a");
}

TEST(FormatDuration, PicksTheUnit) {
    EXPECT_EQ(formatDuration(0), "0 ns");
    EXPECT_EQ(formatDuration(850), "850 ns");
    EXPECT_EQ(formatDuration(12'345), "12.3 us");
    EXPECT_EQ(formatDuration(4'561'000), "4.56 ms");
    EXPECT_EQ(formatDuration(1'234'000'000), "1.234 s");
}

TEST(FormatSize, PicksTheUnit) {
    EXPECT_EQ(formatSize(512), "512 KiB");
    EXPECT_EQ(formatSize(3482), "3.4 MiB");
    EXPECT_EQ(formatSize(1.25 * 1024 * 1024), "1.25 GiB");
}

TEST(DescribeWaitStatus, ExitAndSignal) {
    EXPECT_EQ(describeWaitStatus(exited(0)), "exit 0");
    EXPECT_EQ(describeWaitStatus(exited(3)), "exit 3");
    EXPECT_EQ(describeWaitStatus(killedBy(SIGSEGV)),
              std::string("signal 11 (") + strsignal(SIGSEGV) + ")");
}

TEST(RunLabel, CountsWithinTheMode) {
    const std::vector<RunSample> runs = {sample(kNative, 1, 1, 1), sample(kArbrun, 1, 1, 1),
                                         sample(kNative, 1, 1, 1), sample(kArbrun, 1, 1, 1)};
    EXPECT_EQ(runLabel(runs, 0), "run 1 (native #1)");
    EXPECT_EQ(runLabel(runs, 1), "run 2 (arbrun #1)");
    EXPECT_EQ(runLabel(runs, 2), "run 3 (native #2)");
    EXPECT_EQ(runLabel(runs, 3), "run 4 (arbrun #2)");
}

TEST(Mismatches, NoneWhenAllMatch) {
    const std::vector<RunSample> runs = {sample(kNative, 1, 1, 1, exited(2)),
                                         sample(kArbrun, 9, 9, 9, exited(2))};
    EXPECT_TRUE(mismatches(runs).empty());
    EXPECT_EQ(abExitStatus(runs), 0);
}

TEST(Mismatches, NamesEachRunThatDiffers) {
    const std::vector<RunSample> runs = {
        sample(kNative, 1, 1, 1),
        sample(kArbrun, 1, 1, 1, exited(0), false),
        sample(kNative, 1, 1, 1),
        sample(kArbrun, 1, 1, 1, exited(1)),
        sample(kNative, 1, 1, 1, killedBy(SIGKILL), false),
        sample(kArbrun, 1, 1, 1),
    };
    const std::vector<std::string> expected = {
        "run 2 (arbrun #1): stdout differs",
        "run 4 (arbrun #2): exit 1",
        std::string("run 5 (native #3): stdout differs; signal 9 (") + strsignal(SIGKILL) + ")",
    };
    EXPECT_EQ(mismatches(runs), expected);
    EXPECT_EQ(abExitStatus(runs), 1);
}

TEST(FormatProgress, FirstRunIsTheReference) {
    const std::vector<RunSample> runs = {
        sample(kNative, 1'500'000, 1'200'000, 1536),
        sample(kArbrun, 5'000'000, 3'000'000, 4096, exited(1), false)};
    EXPECT_EQ(formatProgress(runs, 0, 4),
              "arbrun ab: run 1/4 (native #1): wall 1.50 ms, CPU 1.20 ms, peak RSS 1.5 MiB, exit "
              "0, stdout is the reference");
    EXPECT_EQ(formatProgress(runs, 1, 4),
              "arbrun ab: run 2/4 (arbrun #1): wall 5.00 ms, CPU 3.00 ms, peak RSS 4.0 MiB, exit "
              "1, stdout DIFFERS, exit status DIFFERS");
}

TEST(FormatAbReport, MediansRatiosAndMatch) {
    const std::vector<RunSample> runs = {
        sample(kNative, 1'000'000, 500'000, 1024), sample(kArbrun, 2'000'000, 0, 2048),
        sample(kNative, 3'000'000, 700'000, 1024), sample(kArbrun, 6'000'000, 0, 4096),
        sample(kNative, 2'000'000, 600'000, 1024), sample(kArbrun, 4'000'000, 0, 3072),
    };
    EXPECT_EQ(formatAbReport(runs, "'prog'"),
              "arbrun ab: 'prog', 3 runs per mode, medians\n"
              "                  native      arbrun  arbrun/native\n"
              "wall time        2.00 ms     4.00 ms          2.00x\n"
              "CPU time        600.0 us        0 ns          0.00x\n"
              "peak RSS         1.0 MiB     3.0 MiB          3.00x\n"
              "outputs match: stdout and exit status (exit 0) identical in all 6 runs\n");
}

TEST(FormatAbReport, EvenRunsAndZeroNativeCpu) {
    const std::vector<RunSample> runs = {
        sample(kNative, 1'000'000, 0, 100, exited(3)),
        sample(kArbrun, 3'000'000, 2'000, 300, exited(3)),
    };
    const std::string report = formatAbReport(runs, "'x'");
    EXPECT_NE(report.find("'x', 1 run per mode"), std::string::npos) << report;
    EXPECT_NE(report.find("CPU time            0 ns      2.0 us            n/a\n"),
              std::string::npos)
        << report;
    EXPECT_NE(report.find("(exit 3) identical in all 2 runs"), std::string::npos) << report;
}

TEST(FormatAbReport, ListsTheRunsThatDiffer) {
    const std::vector<RunSample> runs = {
        sample(kNative, 1, 1, 1),
        sample(kArbrun, 1, 1, 1, exited(0), false),
        sample(kNative, 1, 1, 1),
        sample(kArbrun, 1, 1, 1, exited(4)),
    };
    const std::string report = formatAbReport(runs, "'p'");
    EXPECT_NE(report.find("outputs differ from run 1 (native #1, exit 0):\n"
                          "  run 2 (arbrun #1): stdout differs\n"
                          "  run 4 (arbrun #2): exit 4\n"),
              std::string::npos)
        << report;
    EXPECT_EQ(report.find("outputs match"), std::string::npos);
}

}  // namespace
}  // namespace arbrun
