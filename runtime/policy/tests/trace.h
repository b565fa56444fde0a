// Text traces for the estimator tests: one line per sample, so a test reads as data. Also the
// replay helpers that feed a trace to an estimator and print what it decided.
//
// Format ('#' starts a comment; blank lines are ignored):
//   +DURATION [xCOUNT] [cID [key=value]...]...
// +DURATION  time since the previous sample (the first line: since 0): 0, 10us, 50ms, 1.5s
//            (units ns, us, ms, s; a bare 0 needs none)
// xCOUNT     the line stands for COUNT samples, DURATION apart (default 1)
// cID        a core granted at the sample (and, for its counters, during the whole interval);
//            the keys after it describe that core over the interval since the previous sample:
//   busy=P%  share of the interval it ran user threads (default 0%)
//   load=L   runnable threads averaged over the interval, counting the running one (default:
//            busy as a fraction, i.e. one thread while busy); must be >= busy
//   q=N      threads waiting to run at the sample (default 0)
//   left=N   threads that stopped waiting during the interval (default: all that waited at the
//            previous sample, i.e. nobody waited across the two samples); left=0 with q > 0 on two
//            consecutive lines is Shenango's "waited across two checks"
// A core's counters are cumulative across the whole trace, like the runtime's, also over lines
// where it is absent (not granted).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arbrt/policy/estimator.h"

namespace arbrt::policy::testing {

// A parsed trace: sample i is at times[i] with the counters cores[i]. A plain value.
struct Trace {
    std::vector<uint64_t> times;
    std::vector<std::vector<CoreCounters>> cores;

    size_t size() const { return times.size(); }
    // Sample i, viewing this trace's storage (valid while the trace is).
    CoreSample sample(size_t i) const { return CoreSample{times[i], cores[i]}; }
};

// Parses a trace; on error returns nullopt and sets *error to "line N: what is wrong".
std::optional<Trace> parseTrace(std::string_view text, std::string* error);
// parseTrace for tests: a bad trace is a test failure (and an empty trace).
Trace traceOf(std::string_view text);

// A decision and the time of the sample it was made on.
struct Timed {
    uint64_t nowNs;
    Decision decision;
};
// Feeds every sample of `trace` to `estimator`, in order.
std::vector<Timed> replay(CoreEstimator& estimator, const Trace& trace);
// The decision points (decisions other than `hold`), as "TIME:CORES(reason)" separated by spaces,
// e.g. "50ms:2(loadFactorHigh) 100ms:2(steady)"; a clamped one ends in '!'.
std::string decisionPoints(const std::vector<Timed>& decisions);
// Only the decisions that changed the count wanted, in the same form.
std::string changes(const std::vector<Timed>& decisions, uint32_t initialWanted);
// A time as tests write it: "0", "10us", "50ms", "1.05s".
std::string compactTime(uint64_t ns);
// Parses "10us" and friends (see the format above); nullopt if malformed.
std::optional<uint64_t> parseDuration(std::string_view text);

}  // namespace arbrt::policy::testing
