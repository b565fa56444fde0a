// `arbrun ab`'s statistics and report text: pure functions over the measured runs, unit-tested.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace arbrun {

enum class RunMode { native, arbrun };

// One measured run.
struct RunSample {
    RunMode mode = RunMode::native;
    int waitStatus = 0;         // raw wait status
    int64_t wallNs = 0;         // fork to reaped
    int64_t cpuNs = 0;          // user + system, with waited-for children
    long maxRssKiB = 0;         // ru_maxrss
    bool stdoutMatches = true;  // byte-equal to the first run's stdout (the first run: true)
};

// The middle value; the mean of the two middle values for an even count; 0 for none.
double median(std::vector<double> values);

// "1.18x": arbrun / native with two decimals; "n/a" when native is 0 (nothing to compare with).
std::string formatRatio(double arbrun, double native);

// "850 ns", "12.3 us", "4.56 ms", "1.234 s".
std::string formatDuration(double ns);

// "512 KiB", "3.4 MiB", "1.25 GiB".
std::string formatSize(double kib);

// "exit 0", "signal 11 (Segmentation fault)".
std::string describeWaitStatus(int waitStatus);

// "run 4 (arbrun #2)": the run's place in execution order and within its mode; index from 0.
std::string runLabel(const std::vector<RunSample>& runs, size_t index);

// One line per run whose stdout or exit status differs from the first run's ("run 4 (arbrun
// #2): stdout differs; signal 11 (Segmentation fault)"); empty when all match.
std::vector<std::string> mismatches(const std::vector<RunSample>& runs);

// The stderr line after run `index` of `total`.
std::string formatProgress(const std::vector<RunSample>& runs, size_t index, size_t total);

// The table: medians per mode, ratios, and whether the outputs matched (naming the runs that
// did not). `program` names what ran. Ends with a newline.
std::string formatAbReport(const std::vector<RunSample>& runs, const std::string& program);

// 0 when every run matched the first one's stdout and exit status, else 1.
int abExitStatus(const std::vector<RunSample>& runs);

}  // namespace arbrun
