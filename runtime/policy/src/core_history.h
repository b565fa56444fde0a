// The previous round's counters of every core, so estimators can take differences of the runtime's
// cumulative counters (a "round" is a sample for the Arachne estimator, a check for the fast one).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "arbrt/policy/estimator.h"

namespace arbrt::policy::detail {

// One core's step from the previous round to this one. `before` is only meaningful when
// `continued`: the core was in the previous round and none of its counters went back. A plain
// value.
struct CoreStep {
    CoreCounters now;
    CoreCounters before;
    bool continued = false;

    // Growth of each counter over the step (only when `continued`: never negative then).
    uint64_t grantedDelta() const { return now.grantedNs - before.grantedNs; }
    uint64_t busyDelta() const { return now.busyNs - before.busyNs; }
    uint64_t runnableDelta() const { return now.runnableNs - before.runnableNs; }
};

// Per-core memory indexed by core id, sized once (kMaxCoreIds entries) so that recording a round
// allocates nothing. Owned by one estimator; not thread-safe.
class CoreHistory {
  public:
    CoreHistory();

    // Starts a new round: cores recorded from now on belong to it.
    void beginRound();
    // Records `counters` for this round and returns its step from the previous round; nullopt for
    // an id outside [0, kMaxCoreIds) or one already recorded in this round (both are ignored).
    std::optional<CoreStep> record(const CoreCounters& counters);
    // Cores recorded in this round.
    uint32_t coresThisRound() const { return current_; }
    // True when this round's cores are exactly the previous round's (same ids).
    bool sameCoresAsPrevious() const { return current_ == previous_ && carriedOver_ == current_; }

  private:
    struct Entry {
        CoreCounters last;   // counters when last recorded
        uint64_t round = 0;  // round it was last recorded in (0: never)
    };
    std::vector<Entry> entries_;  // by core id
    uint64_t round_ = 0;          // the current round's number (1 after the first beginRound)
    uint32_t previous_ = 0;       // cores recorded in the previous round
    uint32_t current_ = 0;        // cores recorded in this round
    uint32_t carriedOver_ = 0;    // of which were also in the previous round
};

}  // namespace arbrt::policy::detail
