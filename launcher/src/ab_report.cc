#include "ab_report.h"

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace arbrun {
namespace {

// snprintf into a std::string, for the number formats below.
template <typename... Args>
std::string format(const char* fmt, Args... args) {
    char buffer[128];
    std::snprintf(buffer, sizeof buffer, fmt, args...);
    return buffer;
}

// The word the table and the labels use.
const char* modeName(RunMode mode) {
    return mode == RunMode::native ? "native" : "arbrun";
}

// One column of values for the runs of one mode.
template <typename T>
std::vector<double> valuesOf(const std::vector<RunSample>& runs, RunMode mode,
                             T RunSample::*field) {
    std::vector<double> values;
    for (const RunSample& r : runs) {
        if (r.mode == mode) values.push_back(double(r.*field));
    }
    return values;
}

// A string padded (left or right) to `width`, for fixed columns.
std::string pad(std::string text, size_t width, bool right) {
    if (text.size() >= width) return text;
    const std::string fill(width - text.size(), ' ');
    return right ? fill + text : text + fill;
}

// One metric's row: its medians per mode and their ratio.
template <typename T>
std::string row(const std::vector<RunSample>& runs, const char* metric, T RunSample::*field,
                std::string (*show)(double)) {
    const double native = median(valuesOf(runs, RunMode::native, field));
    const double arbrun = median(valuesOf(runs, RunMode::arbrun, field));
    return pad(metric, 12, false) + pad(show(native), 12, true) + pad(show(arbrun), 12, true) +
           pad(formatRatio(arbrun, native), 15, true) + "\n";
}

// Runs of the same mode up to and including `index`: "arbrun #2" is the second arbrun run.
size_t modeOrdinal(const std::vector<RunSample>& runs, size_t index) {
    size_t ordinal = 0;
    for (size_t i = 0; i <= index && i < runs.size(); ++i) {
        if (runs[i].mode == runs[index].mode) ++ordinal;
    }
    return ordinal;
}

}  // namespace

// nth_element puts the upper middle in place with only smaller-or-equal values before it, so the
// lower middle is their maximum.
double median(std::vector<double> values) {
    if (values.empty()) return 0;
    const size_t mid = values.size() / 2;
    std::nth_element(values.begin(), values.begin() + std::ptrdiff_t(mid), values.end());
    const double upper = values[mid];
    if (values.size() % 2 == 1) return upper;
    const double lower = *std::max_element(values.begin(), values.begin() + std::ptrdiff_t(mid));
    return (lower + upper) / 2;
}

// A zero native value (a CPU time below the clock's resolution) has no meaningful ratio.
std::string formatRatio(double arbrun, double native) {
    if (native <= 0) return "n/a";
    return format("%.2fx", arbrun / native);
}

// Three significant-ish digits in the unit that fits.
std::string formatDuration(double ns) {
    if (ns < 1e3) return format("%.0f ns", ns);
    if (ns < 1e6) return format("%.1f us", ns / 1e3);
    if (ns < 1e9) return format("%.2f ms", ns / 1e6);
    return format("%.3f s", ns / 1e9);
}

// ru_maxrss is in KiB on Linux.
std::string formatSize(double kib) {
    if (kib < 1024) return format("%.0f KiB", kib);
    if (kib < 1024.0 * 1024) return format("%.1f MiB", kib / 1024);
    return format("%.2f GiB", kib / (1024.0 * 1024));
}

// As a shell would say it, with the signal's name.
std::string describeWaitStatus(int waitStatus) {
    if (WIFEXITED(waitStatus)) return format("exit %d", WEXITSTATUS(waitStatus));
    if (WIFSIGNALED(waitStatus)) {
        return format("signal %d (%s)", WTERMSIG(waitStatus), strsignal(WTERMSIG(waitStatus)));
    }
    return format("wait status %#x", waitStatus);
}

// The mode's own count lets a user match "arbrun #2" with the second arbrun progress line.
std::string runLabel(const std::vector<RunSample>& runs, size_t index) {
    return format("run %zu (%s #%zu)", index + 1, modeName(runs[index].mode),
                  modeOrdinal(runs, index));
}

// Everything is compared with the first run (native #1): the reference output.
std::vector<std::string> mismatches(const std::vector<RunSample>& runs) {
    std::vector<std::string> lines;
    for (size_t i = 1; i < runs.size(); ++i) {
        std::vector<std::string> what;
        if (!runs[i].stdoutMatches) what.push_back("stdout differs");
        if (runs[i].waitStatus != runs[0].waitStatus) {
            what.push_back(describeWaitStatus(runs[i].waitStatus));
        }
        if (what.empty()) continue;
        std::string line = runLabel(runs, i) + ": " + what[0];
        for (size_t k = 1; k < what.size(); ++k) line += "; " + what[k];
        lines.push_back(line);
    }
    return lines;
}

// One line per run so a long benchmark shows it is alive and a strange run is seen at once.
std::string formatProgress(const std::vector<RunSample>& runs, size_t index, size_t total) {
    const RunSample& r = runs[index];
    std::string line = format("arbrun ab: run %zu/%zu (%s #%zu): wall ", index + 1, total,
                              modeName(r.mode), modeOrdinal(runs, index)) +
                       formatDuration(double(r.wallNs)) + ", CPU " +
                       formatDuration(double(r.cpuNs)) + ", peak RSS " +
                       formatSize(double(r.maxRssKiB)) + ", " + describeWaitStatus(r.waitStatus);
    if (index == 0) return line + ", stdout is the reference";
    line += r.stdoutMatches ? ", stdout matches" : ", stdout DIFFERS";
    if (r.waitStatus != runs[0].waitStatus) line += ", exit status DIFFERS";
    return line;
}

// Medians, not means: one run disturbed by the machine should not move the comparison.
std::string formatAbReport(const std::vector<RunSample>& runs, const std::string& program) {
    const size_t perMode = size_t(std::count_if(
        runs.begin(), runs.end(), [](const RunSample& r) { return r.mode == RunMode::native; }));
    std::string out = "arbrun ab: " + program + ", " + std::to_string(perMode) +
                      (perMode == 1 ? " run" : " runs") + " per mode, medians\n";
    out += pad("", 12, false) + pad("native", 12, true) + pad("arbrun", 12, true) +
           pad("arbrun/native", 15, true) + "\n";
    out += row(runs, "wall time", &RunSample::wallNs, formatDuration);
    out += row(runs, "CPU time", &RunSample::cpuNs, formatDuration);
    out += row(runs, "peak RSS", &RunSample::maxRssKiB, formatSize);
    const std::vector<std::string> differ = mismatches(runs);
    if (differ.empty()) {
        return out + "outputs match: stdout and exit status (" +
               (runs.empty() ? std::string("none") : describeWaitStatus(runs[0].waitStatus)) +
               ") identical in all " + std::to_string(runs.size()) + " runs\n";
    }
    out += std::string("outputs differ from run 1 (") + modeName(runs[0].mode) + " #1, " +
           describeWaitStatus(runs[0].waitStatus) + "):\n";
    for (const std::string& line : differ) out += "  " + line + "\n";
    return out;
}

// Timing never fails the comparison; only a difference in behaviour does.
int abExitStatus(const std::vector<RunSample>& runs) {
    return mismatches(runs).empty() ? 0 : 1;
}

}  // namespace arbrun
