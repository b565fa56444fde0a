// Differences of cumulative per-core counters between rounds.
#include "core_history.h"

namespace arbrt::policy::detail {
namespace {

// A counter that went back means the runtime started the core's counters afresh: the step cannot
// be measured, so the core starts over as if new.
bool monotonic(const CoreCounters& before, const CoreCounters& now) {
    return now.grantedNs >= before.grantedNs && now.busyNs >= before.busyNs &&
           now.runnableNs >= before.runnableNs && now.enqueued >= before.enqueued &&
           now.dequeued >= before.dequeued;
}

}  // namespace

// Sized once so recording never allocates (onSample runs every few microseconds).
CoreHistory::CoreHistory() : entries_(kMaxCoreIds) {}

// Rolls this round's count into `previous_`; round numbers start at 1 so 0 means "never".
void CoreHistory::beginRound() {
    previous_ = current_;
    current_ = 0;
    carriedOver_ = 0;
    ++round_;
}

// Entry::round tells whether the core was seen in the previous round (continued) or already in
// this one (a repeated id).
std::optional<CoreStep> CoreHistory::record(const CoreCounters& counters) {
    if (counters.coreId < 0 || counters.coreId >= kMaxCoreIds) return std::nullopt;
    Entry& entry = entries_[static_cast<size_t>(counters.coreId)];
    if (entry.round == round_) return std::nullopt;
    CoreStep step{counters, entry.last, false};
    if (entry.round != 0 && entry.round + 1 == round_) {
        ++carriedOver_;
        step.continued = monotonic(entry.last, counters);
    }
    entry.last = counters;
    entry.round = round_;
    ++current_;
    return step;
}

}  // namespace arbrt::policy::detail
