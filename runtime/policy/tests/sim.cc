// The closed-loop demand simulator (model in sim.h).
#include "sim.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "trace.h"

namespace arbrt::policy::testing {
namespace {

// Per-core state the simulator carries between steps: the runtime's cumulative counters and the
// queue length at the last sample.
struct SimCore {
    CoreCounters counters;
    uint64_t queued = 0;
};

// Advances cores 0..n-1 by one step of the phase's demand (the model in sim.h).
void step(const Phase& phase, uint32_t n, uint64_t stepNs, std::vector<SimCore>* cores) {
    constexpr double kEps = 1e-9;
    const uint32_t occupied =
        std::min(n, static_cast<uint32_t>(std::ceil(std::max(0.0, phase.threads - kEps))));
    const double work = std::min(phase.work, static_cast<double>(n));
    const double excess = std::floor(std::max(0.0, phase.threads - n + kEps));
    const uint64_t waiting =
        static_cast<uint64_t>(phase.work > n + kEps ? std::max(1.0, excess) : excess);
    const double interval = static_cast<double>(stepNs);
    for (uint32_t i = 0; i < n; ++i) {
        SimCore& core = (*cores)[i];
        double busy = 0, load = 0;
        uint64_t queued = 0;
        if (i < occupied) {
            busy = work / occupied;
            load = phase.threads / occupied;
            queued = waiting / occupied + (i < waiting % occupied ? 1 : 0);
        }
        const uint64_t left = core.queued > queued ? core.queued - queued : 0;
        CoreCounters& c = core.counters;
        c.grantedNs += stepNs;
        c.busyNs += static_cast<uint64_t>(std::llround(busy * interval));
        c.runnableNs += static_cast<uint64_t>(std::llround(load * interval));
        c.enqueued += queued + left - core.queued;
        c.dequeued += left;
        core.queued = queued;
    }
    // Released cores' waiting threads moved elsewhere: their queues are empty.
    for (size_t i = n; i < cores->size(); ++i) {
        SimCore& core = (*cores)[i];
        core.counters.dequeued = core.counters.enqueued;
        core.queued = 0;
    }
}

// One demand line: DURATION work=W [threads=R] [xCOUNT]. Returns an error or "".
std::string parsePhase(std::istringstream& words, std::vector<Phase>* out) {
    std::string word;
    words >> word;
    std::optional<uint64_t> duration = parseDuration(word);
    if (!duration || *duration == 0) return "'" + word + "' is not a duration (200ms, 1s, ...)";
    Phase phase{*duration, -1, -1};
    uint64_t count = 1;
    while (words >> word) {
        double value = 0;
        if (std::sscanf(word.c_str(), "work=%lf", &value) == 1 && value >= 0) {
            phase.work = value;
        } else if (std::sscanf(word.c_str(), "threads=%lf", &value) == 1 && value >= 0) {
            phase.threads = value;
        } else if (word[0] != 'x' || std::sscanf(word.c_str(), "x%lu", &count) != 1 || count == 0) {
            return "'" + word + "' is not work=W, threads=R or xCOUNT";
        }
    }
    if (phase.work < 0) return "a phase needs work=W";
    if (phase.threads < 0) phase.threads = phase.work;
    if (phase.threads + 1e-9 < phase.work) return "threads must be >= work (running ones count)";
    if (phase.work == 0 && phase.threads > 0) return "runnable threads need work > 0";
    out->insert(out->end(), count, phase);
    return "";
}

}  // namespace

// Line by line; a repeat group is collected and copied at its "end".
std::optional<std::vector<Phase>> parseDemand(std::string_view text, std::string* error) {
    std::vector<Phase> phases, group;
    uint64_t repeat = 0;
    std::istringstream lines{std::string(text)};
    std::string line;
    for (int number = 1; std::getline(lines, line); ++number) {
        if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
        std::istringstream words(line);
        std::string first;
        if (!(words >> first)) continue;
        std::string problem;
        if (first == "repeat") {
            if (repeat > 0) problem = "repeat groups do not nest";
            if (!(words >> repeat) || repeat == 0) problem = "repeat needs a count";
        } else if (first == "end") {
            if (repeat == 0) problem = "end without repeat";
            for (; repeat > 0; --repeat) phases.insert(phases.end(), group.begin(), group.end());
            group.clear();
        } else {
            words.clear();
            words.seekg(0);
            problem = parsePhase(words, repeat > 0 ? &group : &phases);
        }
        if (!problem.empty()) {
            *error = "line " + std::to_string(number) + ": " + problem;
            return std::nullopt;
        }
    }
    if (repeat > 0) {
        *error = "repeat without end";
        return std::nullopt;
    }
    return phases;
}

std::vector<Phase> demandOf(std::string_view text) {
    std::string error;
    std::optional<std::vector<Phase>> phases = parseDemand(text, &error);
    if (!phases) {
        ADD_FAILURE() << "bad demand: " << error;
        return {};
    }
    return *phases;
}

namespace {

// The closed loop shared by both simulations: the count granted during a step is what the
// estimator wanted at the previous sample (the arbiter grants at once). `advance(granted)` moves
// the cores' counters over one step and returns the work (cores' worth) that wanted to run.
class Loop {
  public:
    Loop(CoreEstimator& estimator, uint64_t stepNs)
        : estimator_(estimator), stepNs_(stepNs), cores_(kMaxCoreIds) {
        for (int id = 0; id < kMaxCoreIds; ++id) {
            cores_[static_cast<size_t>(id)].counters.coreId = id;
        }
        granted_ = estimator.wantedCores();
        result_.grants = std::to_string(granted_) + "@0";
        result_.peakCores = granted_;
        next_ = sampleNow();  // the first sample, at 0, is the baseline
    }

    // One step: apply the last decision, advance, sample.
    template <typename Advance>
    void step(Advance&& advance) {
        if (next_ != granted_) {
            granted_ = next_;
            result_.grants += ' ';
            result_.grants += std::to_string(granted_) + "@" + compactTime(now_);
            ++result_.changes;
            result_.peakCores = std::max(result_.peakCores, granted_);
        }
        const double work = advance(granted_, &cores_);
        now_ += stepNs_;
        const double seconds = static_cast<double>(stepNs_) / 1e9;
        result_.coreSeconds += granted_ * seconds;
        result_.unservedSeconds += std::max(0.0, work - granted_) * seconds;
        next_ = sampleNow();
    }

    const SimResult& result() const { return result_; }

  private:
    // Feeds the granted cores' counters to the estimator; returns the count it wants.
    uint32_t sampleNow() {
        sample_.clear();
        for (uint32_t i = 0; i < granted_; ++i) sample_.push_back(cores_[i].counters);
        return estimator_.onSample(CoreSample{now_, sample_}).cores;
    }

    CoreEstimator& estimator_;
    uint64_t stepNs_;
    std::vector<SimCore> cores_;
    std::vector<CoreCounters> sample_;
    SimResult result_;
    uint32_t granted_ = 0;
    uint32_t next_ = 0;
    uint64_t now_ = 0;
};

}  // namespace

// Steps through every phase with the demand model of sim.h.
SimResult simulate(CoreEstimator& estimator, const std::vector<Phase>& demand, uint64_t stepNs) {
    Loop loop(estimator, stepNs);
    for (const Phase& phase : demand) {
        for (uint64_t t = 0; t < phase.durationNs; t += stepNs) {
            loop.step([&](uint32_t granted, std::vector<SimCore>* cores) {
                step(phase, granted, stepNs, cores);
                return phase.work;
            });
        }
    }
    return loop.result();
}

// Every granted core gets the model's busy share and load; nobody waits across checks.
SimResult simulateLoad(CoreEstimator& estimator, const LoadModel& model, uint64_t durationNs,
                       uint64_t stepNs) {
    Loop loop(estimator, stepNs);
    for (uint64_t t = 0; t < durationNs; t += stepNs) {
        loop.step([&](uint32_t granted, std::vector<SimCore>* cores) {
            const CoreLoad load = model(granted);
            const double interval = static_cast<double>(stepNs);
            for (uint32_t i = 0; i < granted; ++i) {
                CoreCounters& c = (*cores)[i].counters;
                c.grantedNs += stepNs;
                c.busyNs += static_cast<uint64_t>(std::llround(load.busy * interval));
                c.runnableNs += static_cast<uint64_t>(std::llround(load.load * interval));
            }
            return load.busy * granted;
        });
    }
    return loop.result();
}

}  // namespace arbrt::policy::testing
