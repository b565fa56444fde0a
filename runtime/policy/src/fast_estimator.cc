// Shenango-style fast core estimator (rules in fast_estimator.h).
#include "arbrt/policy/fast_estimator.h"

#include <algorithm>
#include <stdexcept>

#include "core_history.h"
#include "decide.h"
#include "format.h"

namespace arbrt::policy {

using detail::formatDuration;

namespace {

constexpr uint64_t kMinPeriodNs = 5'000;
constexpr uint64_t kMaxPeriodNs = 50'000'000;
constexpr uint64_t kMaxGraceNs = 60'000'000'000;

// What one check found on one core.
struct CoreFinding {
    uint64_t waitedAcross = 0;  // threads that waited at the previous check and still wait
    bool idle = false;          // the interval since the previous check was idle
};

// The two per-core rules of the file comment, on one core's step between checks.
CoreFinding examine(const detail::CoreStep& step) {
    CoreFinding finding;
    const CoreCounters& before = step.before;
    const CoreCounters& now = step.now;
    if (before.enqueued > before.dequeued && now.dequeued < before.enqueued) {
        finding.waitedAcross = before.enqueued - now.dequeued;
    }
    finding.idle =
        step.busyDelta() == 0 && now.enqueued == before.enqueued && now.dequeued >= now.enqueued;
    return finding;
}

}  // namespace

// Bounds: checks faster than 5 us cost more than the latency they save (Shenango's iokernel, a
// dedicated core, checks every 5 us); slower than 50 ms the fast path is slower than Arachne's
// window. The grace must span two checks (see FastParams) and at most a minute.
std::optional<std::string> validate(const FastParams& p) {
    const std::string prefix = "fast estimator: ";
    if (auto error = validate(p.limits)) return prefix + *error;
    if (p.periodNs < kMinPeriodNs || p.periodNs > kMaxPeriodNs) {
        return prefix + "check period " + formatDuration(p.periodNs) + " must be in [" +
               formatDuration(kMinPeriodNs) + ", " + formatDuration(kMaxPeriodNs) +
               "] (default 10 us)";
    }
    if (p.idleGraceNs < 2 * p.periodNs || p.idleGraceNs > kMaxGraceNs) {
        return prefix + "idle grace " + formatDuration(p.idleGraceNs) +
               " must be at least two check periods (" + formatDuration(2 * p.periodNs) +
               ") and at most " + formatDuration(kMaxGraceNs) + " (default 250 us)";
    }
    return std::nullopt;
}

// Invalid settings are the caller's bug (the launcher validates user input first): fail at once.
// The per-core arrays are sized here so checks never allocate.
FastEstimator::FastEstimator(const FastParams& params)
    : params_(params),
      history_(std::make_unique<detail::CoreHistory>()),
      wanted_(params.limits.minCores),
      idleSinceNs_(kMaxCoreIds, kNotIdle),
      window_(kUtilisationWindowGraces * params.idleGraceNs,
              kMaxUtilisationWindowScale * kUtilisationWindowGraces * params.idleGraceNs, 1),
      grace_(params.idleGraceNs, std::min(kMaxIdleGraceScale * params.idleGraceNs, kMaxGraceNs),
             kGraceTrialGraces) {
    if (auto error = validate(params)) throw std::invalid_argument(*error);
}

// Out of line: CoreHistory is only complete here.
FastEstimator::~FastEstimator() = default;

// One check: examine every core against the previous check, then apply the rules in order (idle
// grace, waiting, hold).
Decision FastEstimator::onSample(const CoreSample& sample) {
    Decision d{wanted_, 0, Reason::hold};
    if (started_ && sample.nowNs < lastNowNs_) return d;  // older than the last: ignored
    lastNowNs_ = sample.nowNs;
    if (started_ && sample.nowNs - lastCheckNs_ < params_.periodNs) return d;
    history_->beginRound();
    uint64_t mostWaiting = 0, longestIdleNs = 0;
    int waitingCore = -1, idleCore = -1;
    uint32_t idleNow = 0, idlePastGrace = 0;
    for (const CoreCounters& counters : sample.cores) {
        std::optional<detail::CoreStep> step = history_->record(counters);
        if (!step) continue;
        uint64_t& idleSince = idleSinceNs_[static_cast<size_t>(counters.coreId)];
        if (!step->continued) {
            idleSince = kNotIdle;
            continue;
        }
        const CoreFinding finding = examine(*step);
        addToWindow(*step, finding.waitedAcross > 0);
        if (finding.waitedAcross > mostWaiting ||
            (finding.waitedAcross > 0 && finding.waitedAcross == mostWaiting &&
             counters.coreId < waitingCore)) {
            mostWaiting = finding.waitedAcross;
            waitingCore = counters.coreId;
        }
        if (!finding.idle) {
            idleSince = kNotIdle;
            continue;
        }
        ++idleNow;
        if (idleSince == kNotIdle) idleSince = lastCheckNs_;
        const uint64_t idleNs = sample.nowNs - idleSince;
        if (idleNs < grace_.ns()) continue;
        ++idlePastGrace;
        if (idleNs > longestIdleNs || (idleNs == longestIdleNs && counters.coreId < idleCore)) {
            longestIdleNs = idleNs;
            idleCore = counters.coreId;
        }
    }
    const uint32_t granted = history_->coresThisRound();
    d.granted = granted;
    const uint64_t sincePrevious = sample.nowNs - lastCheckNs_;
    lastCheckNs_ = sample.nowNs;
    if (!started_ || !history_->sameCoresAsPrevious()) restartWindow(sample.nowNs);
    if (!started_) {
        started_ = true;
        detail::settle(granted, params_.limits, &d);
        d.clamped = false;
        wanted_ = d.cores;
        return d;
    }
    int64_t proposal = wanted_;
    const bool scaleUp = idlePastGrace == 0 && waitingCore >= 0 && idleNow == 0;
    // The grace's give-back is judged at every check before its decision, "held" first: a
    // scale-up at a (late) check past the trial comes after the give-back held.
    grace_.judgeHeld(sample.nowNs);
    if (scaleUp) grace_.judgeAskedBack(sample.nowNs);
    if (idlePastGrace > 0) {
        d.reason = Reason::coreIdle;
        d.coreId = idleCore;
        d.measured = static_cast<double>(longestIdleNs);
        d.limit = static_cast<double>(grace_.ns());
        proposal = int64_t{granted} - idlePastGrace;
    } else if (scaleUp) {
        d.reason = Reason::queuedAcrossChecks;
        d.coreId = waitingCore;
        d.measured = static_cast<double>(sincePrevious);
        d.limit = static_cast<double>(params_.periodNs);
        proposal = int64_t{granted} + 1;
        // A scale-up within a window of a utilisation give-back proves it wrong for this load:
        // the next window is twice as long, so the load moves at most once per window.
        window_.judgeAskedBack(sample.nowNs);
    } else if (giveBackOnUtilisation(granted, sample.nowNs, &d)) {
        proposal = int64_t{granted} - 1;
    } else {
        d.reason = Reason::steady;
    }
    detail::settle(proposal, params_.limits, &d);
    if (d.reason == Reason::coreIdle && d.cores < wanted_) {  // a give-back, not its repetition
        grace_.gaveBack(sample.nowNs);
    }
    wanted_ = d.cores;
    return d;
}

void FastEstimator::LearnedSpan::gaveBack(uint64_t nowNs) {
    onTrial_ = true;
    gaveBackNs_ = nowNs;
}

void FastEstimator::LearnedSpan::judgeHeld(uint64_t nowNs) {
    if (!onTrial_ || nowNs - gaveBackNs_ <= trialSpans_ * ns_) return;
    onTrial_ = false;
    ns_ = std::max(shortestNs_, ns_ / 2);
}

void FastEstimator::LearnedSpan::judgeAskedBack(uint64_t nowNs) {
    if (!onTrial_) return;
    onTrial_ = false;
    if (nowNs - gaveBackNs_ > trialSpans_ * ns_) return;  // past the trial: not this give-back's
    ns_ = std::min(longestNs_, 2 * ns_);
}

// Adds one core's step between checks to the utilisation window (the window is restarted
// separately when the set of cores changed, so only continued steps reach here).
void FastEstimator::addToWindow(const detail::CoreStep& step, bool waited) {
    windowGrantedNs_ += step.grantedDelta();
    windowBusyNs_ += step.busyDelta();
    windowWaited_ |= waited;
}

// The utilisation give-back of the file comment, at a check where neither the grace nor a waiting
// thread decided. Also ends a give-back's trial that lasted a window (it held: the window halves)
// and restarts a window that has run its length, so it always measures the recent past.
bool FastEstimator::giveBackOnUtilisation(uint32_t granted, uint64_t nowNs, Decision* d) {
    window_.judgeHeld(nowNs);
    if (nowNs - windowStartNs_ < window_.ns()) return false;
    const bool quiet = !windowWaited_ && windowGrantedNs_ > 0 && granted >= 2;
    const double work =
        quiet ? static_cast<double>(windowBusyNs_) / static_cast<double>(windowGrantedNs_) * granted
              : 0;
    restartWindow(nowNs);
    if (!quiet) return false;
    const double projected = work / (granted - 1);
    const double limit = 1.0 - kGiveBackMargin;
    if (projected >= limit) return false;
    d->reason = Reason::utilisationLow;
    d->measured = projected;
    d->limit = limit;
    window_.gaveBack(nowNs);
    return true;
}

// The window starts at a check, whose counters are the baseline of the next differences.
void FastEstimator::restartWindow(uint64_t nowNs) {
    windowStartNs_ = nowNs;
    windowGrantedNs_ = windowBusyNs_ = 0;
    windowWaited_ = false;
}

// The next check; 0 before the first sample (sample at once).
uint64_t FastEstimator::nextDecisionNs() const {
    return started_ ? detail::saturatingAdd(lastCheckNs_, params_.periodNs) : 0;
}

}  // namespace arbrt::policy
