// Arachne's window-based core estimator (rules in arachne_estimator.h).
#include "arbrt/policy/arachne_estimator.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core_history.h"
#include "decide.h"
#include "format.h"

namespace arbrt::policy {

using detail::formatDuration;
using detail::formatNumber;

namespace {

constexpr uint64_t kMinWindowNs = 1'000'000;
constexpr uint64_t kMaxWindowNs = 60'000'000'000;

}  // namespace

// Bounds chosen so every value still means something: a window under 1 ms holds too few
// dispatches to average, one over 60 s reacts too late to matter; a threshold <= 1 would add cores
// to a process whose threads never wait; a hysteresis of half a core's utilisation or more would
// keep cores that are mostly idle.
std::optional<std::string> validate(const ArachneParams& p) {
    const std::string prefix = "arachne estimator: ";
    if (auto error = validate(p.limits)) return prefix + *error;
    if (p.windowNs < kMinWindowNs || p.windowNs > kMaxWindowNs) {
        return prefix + "window " + formatDuration(p.windowNs) + " must be in [" +
               formatDuration(kMinWindowNs) + ", " + formatDuration(kMaxWindowNs) +
               "] (default 50 ms)";
    }
    if (!std::isfinite(p.loadFactorThreshold) || !(p.loadFactorThreshold > 1.0)) {
        return prefix + "load-factor threshold " + formatNumber(p.loadFactorThreshold) +
               " must be a finite number > 1.0 (default 1.5)";
    }
    if (!(p.hysteresis > 0.0 && p.hysteresis < 0.5)) {
        return prefix + "hysteresis " + formatNumber(p.hysteresis) +
               " must be in (0, 0.5), a fraction of a core's utilisation (default 0.09)";
    }
    return std::nullopt;
}

// Invalid settings are the caller's bug (the launcher validates user input first): fail at once.
ArachneEstimator::ArachneEstimator(const ArachneParams& params)
    : params_(params),
      history_(std::make_unique<detail::CoreHistory>()),
      wanted_(params.limits.minCores) {
    if (auto error = validate(params)) throw std::invalid_argument(*error);
}

// Out of line: CoreHistory is only complete here.
ArachneEstimator::~ArachneEstimator() = default;

// Accumulates the sample into the window and decides only when the window is over; a change of
// the granted cores throws the window away (it would mix two core counts).
Decision ArachneEstimator::onSample(const CoreSample& sample) {
    Decision hold{wanted_, 0, Reason::hold};
    if (started_ && sample.nowNs < lastNowNs_) return hold;  // older than the last: ignored
    lastNowNs_ = sample.nowNs;
    history_->beginRound();
    uint64_t granted = 0, busy = 0, runnable = 0;
    for (const CoreCounters& counters : sample.cores) {
        std::optional<detail::CoreStep> step = history_->record(counters);
        if (!step || !step->continued) continue;
        granted += step->grantedDelta();
        busy += step->busyDelta();
        runnable += step->runnableDelta();
    }
    const uint32_t cores = history_->coresThisRound();
    hold.granted = cores;
    if (!started_) {  // before any decision, the process wants what it holds
        started_ = true;
        detail::settle(cores, params_.limits, &hold);
        hold.clamped = false;
        wanted_ = hold.cores;
        restartWindow(sample.nowNs);
        return hold;
    }
    if (!history_->sameCoresAsPrevious()) {
        restartWindow(sample.nowNs);
        return hold;
    }
    grantedSum_ += granted;
    busySum_ += busy;
    runnableSum_ += runnable;
    if (sample.nowNs - windowStartNs_ < params_.windowNs) return hold;
    Decision decision = decide(cores);
    restartWindow(sample.nowNs);
    return decision;
}

// The rules of the file comment, on the window's sums. A window in which no core was granted
// measures nothing and keeps the count.
Decision ArachneEstimator::decide(uint32_t granted) {
    Decision d{wanted_, granted, Reason::steady};
    int64_t proposal = wanted_;
    if (quietCores_ != granted) quietWindows_ = 0;  // a run of quiet windows is at one count
    quietCores_ = granted;
    if (grantedSum_ > 0) {
        const double total = static_cast<double>(grantedSum_);
        const double loadFactor = static_cast<double>(runnableSum_) / total;
        const double work = static_cast<double>(busySum_) / total * granted;
        d.measured = loadFactor;
        d.limit = params_.loadFactorThreshold;
        if (loadFactor > params_.loadFactorThreshold) {
            d.reason = Reason::loadFactorHigh;
            proposal = int64_t{granted} + 1;
            if (proposal <= params_.limits.maxCores) recordScaleUp(granted, work);
            quietWindows_ = 0;
        } else if (granted >= 2) {
            const uint32_t fewer = granted - 1;
            const double projected = work / fewer;
            const double ceiling = scaleDownCeiling(granted, loadFactor);
            if (projected < ceiling) {
                d.reason = Reason::utilisationLow;
                d.measured = projected;
                d.limit = ceiling;
                proposal = fewer;
            }
        }
    }
    detail::settle(proposal, params_.limits, &d);
    wanted_ = d.cores;
    return d;
}

// Remembers up[granted]. A record made again after the previous one expired shows the expiry was
// wrong for this load (it scaled down and had to come back), so the next one lasts twice as long.
void ArachneEstimator::recordScaleUp(uint32_t granted, double work) {
    ScaleUpRecord& record = scaleUps_[granted];
    if (record.expired) {
        record.lifetimeWindows = std::min(2 * record.lifetimeWindows, kMaxRecordLifetimeWindows);
        record.expired = false;
    }
    record.work = work;
}

// The down rule's ceiling for going from `granted` (>= 2) to one core fewer, after ageing the
// record up[granted - 1] by this window: a quiet window (lf projected onto the remaining cores at
// most kQuietLoadFactor) extends the run of quiet ones, any other breaks it; a run as long as the
// record's lifetime drops the record.
double ArachneEstimator::scaleDownCeiling(uint32_t granted, double loadFactor) {
    const uint32_t fewer = granted - 1;
    const bool quiet = loadFactor * granted / fewer <= kQuietLoadFactor;
    quietWindows_ = quiet ? quietWindows_ + 1 : 0;
    ScaleUpRecord& record = scaleUps_[fewer];
    if (record.work >= 0 && record.work / fewer < kExpirableUtilisation &&
        quietWindows_ >= record.lifetimeWindows) {
        record.work = -1;
        record.expired = true;
    }
    double ceiling = 1.0 - params_.hysteresis;
    if (record.work >= 0) ceiling = std::min(ceiling, record.work / fewer - params_.hysteresis);
    return std::max(ceiling, kIdleUtilisation);
}

// A window starts at a sample, whose counters are the baseline of the next differences.
void ArachneEstimator::restartWindow(uint64_t nowNs) {
    windowStartNs_ = nowNs;
    grantedSum_ = busySum_ = runnableSum_ = 0;
}

// The end of the current window; 0 before the first sample (sample at once to start one).
uint64_t ArachneEstimator::nextDecisionNs() const {
    return started_ ? detail::saturatingAdd(windowStartNs_, params_.windowNs) : 0;
}

}  // namespace arbrt::policy
