// A closed-loop simulator for the estimator tests: a demand trace (what the program wants to run)
// goes in, the estimator's decisions set how many cores are granted (the arbiter grants every
// request at once), and the simulator derives each core's counters from the demand and the cores
// it has. It answers "which cores did the estimator hold over time, at what cost".
//
// Demand format, one phase per line ('#' comments, blank lines ignored):
//   DURATION work=W [threads=R] [xCOUNT]
// work     cores' worth of CPU the program would use if it had them (2.5: two and a half cores)
// threads  runnable threads on average, running or waiting (default W): R > W means threads queue
//          even with cores to spare (bursty arrivals), R = W that they queue only past saturation
// xCOUNT   the line repeats COUNT times (for traces that alternate phases, put both in a group
//          line "repeat COUNT" ... "end"; see parseDemand)
//
// The model, per step of stepNs with n granted cores (cores 0..n-1):
//   - the runnable threads occupy k = min(n, ceil(R)) cores (the runtime spreads threads; a core
//     with no thread is idle, which is what the fast estimator's grace acts on);
//   - the work done, min(W, n), is shared evenly by the k occupied cores, and so are the R
//     runnable threads (each occupied core's load factor is R / k);
//   - threads wait across checks (Shenango's signal) only when they outnumber the cores by a whole
//     thread, floor(R - n) >= 1, or when the cores are saturated (W > n: at least one waits); those
//     waiting are spread over the occupied cores and stay the same threads while their number does
//     not shrink (threads compute in slices longer than a check period). Other queueing (R > W
//     with cores to spare) is bursty: it raises the load factor but drains within a check;
//   - no backlog carries over between steps: the demand is what is observed, not a queue.
// It is a test model, deliberately simple; it is not a claim about real programs.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arbrt/policy/estimator.h"

namespace arbrt::policy::testing {

// One phase of demand. A plain value.
struct Phase {
    uint64_t durationNs = 0;
    double work = 0;     // cores' worth
    double threads = 0;  // runnable threads on average (>= work)
};

// Parses a demand trace; "repeat N" ... "end" (not nested) repeats the lines between. On error
// returns nullopt and sets *error to "line N: what is wrong".
std::optional<std::vector<Phase>> parseDemand(std::string_view text, std::string* error);
// parseDemand for tests: a bad trace is a test failure (and no phases).
std::vector<Phase> demandOf(std::string_view text);

// What a simulation measured. A plain value.
struct SimResult {
    double coreSeconds = 0;      // sum over steps of cores granted x step
    double unservedSeconds = 0;  // sum of max(0, work - cores) x step: work that had to wait
    uint32_t peakCores = 0;
    // Each change of the granted count as "CORES@TIME", from "N@0" (the initial grant).
    std::string grants;
    uint32_t changes = 0;  // number of changes of the granted count
};

// Runs `estimator` against the demand, sampling every stepNs; the first grant is the estimator's
// wantedCores() before any sample, and each decision is granted for the next step.
SimResult simulate(CoreEstimator& estimator, const std::vector<Phase>& demand, uint64_t stepNs);

// What every granted core does over a step, for loads the demand model cannot state (queueing that
// grows faster than the cores shrink, as in a queue near saturation). A plain value.
struct CoreLoad {
    double busy = 0;  // share of the step it ran user threads
    double load = 0;  // runnable threads on average, counting the running one (>= busy)
};
// The load each granted core carries when `granted` cores are granted.
using LoadModel = std::function<CoreLoad(uint32_t granted)>;

// Like simulate(), for durationNs, with every granted core carrying model(granted) (nobody waits
// across checks); the work that wanted to run is counted as what the cores ran.
SimResult simulateLoad(CoreEstimator& estimator, const LoadModel& model, uint64_t durationNs,
                       uint64_t stepNs);

}  // namespace arbrt::policy::testing
