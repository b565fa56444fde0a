// Barrier-aware release: when the core arbiter asks for a core back, a thread of a barrier-heavy
// program that is about to wait at its barrier should lose the core there, not be preempted in the
// middle of a phase (moved mid-phase, it finishes its phase late on a core shared with another
// thread, and every other thread waits for it at the barrier). The runtime cannot see a program's
// phases, but it sees every park: a data-parallel thread parks once per phase, so the time between
// its parks predicts when it will park next. The release watcher lets the runner reach that park
// when it is expected within the remaining deferral budget, and preempts it otherwise: a thread
// that never parked (compute-bound: no history) is preempted at once, so the fast release of a
// compute-bound tenant is unchanged.
//
// Pure logic (tested in arbrt_logic_tests); the caller supplies TSC ticks.
#pragma once

#include <cstdint>

namespace arbrt::detail {

// A thread's park rhythm, kept in its ThreadContext. Written only by the thread itself when it
// parks (switch.cc), in arbiter mode; read racily by the release watcher (a torn pair costs one
// wrong deferral decision, bounded by the budget).
struct ParkRhythm {
    uint64_t lastParkTsc = 0;  // when it last parked; 0: never since it was created
    uint64_t periodTicks = 0;  // average time between consecutive parks; 0: fewer than two parks
};

// Records a park at `nowTsc`: an exponentially weighted average of the park-to-park interval with
// weight 1/4, so one slow phase (a page fault storm, a preemption) moves it by a quarter only.
inline void recordPark(ParkRhythm* r, uint64_t nowTsc) {
    if (r->lastParkTsc != 0 && nowTsc > r->lastParkTsc) {
        const uint64_t interval = nowTsc - r->lastParkTsc;
        r->periodTicks =
            r->periodTicks == 0 ? interval : r->periodTicks - r->periodTicks / 4 + interval / 4;
    }
    r->lastParkTsc = nowTsc;
}

// Racy accessors for the release watcher and the parking thread: each word is read and written
// whole (relaxed atomics), the pair is not (see ParkRhythm).
inline ParkRhythm loadParkRhythm(const ParkRhythm* r) {
    return {__atomic_load_n(&r->lastParkTsc, __ATOMIC_RELAXED),
            __atomic_load_n(&r->periodTicks, __ATOMIC_RELAXED)};
}
inline void storeParkRhythm(ParkRhythm* r, const ParkRhythm& value) {
    __atomic_store_n(&r->lastParkTsc, value.lastParkTsc, __ATOMIC_RELAXED);
    __atomic_store_n(&r->periodTicks, value.periodTicks, __ATOMIC_RELAXED);
}

// Whether the release watcher should leave a core asked back to its runner until the runner parks
// instead of preempting it now. `waitedTicks` is how long this release has already been deferred;
// `budgetTicks` the most a release may be deferred in all (0: never defer). Defers only when the
// runner has a rhythm, is not overdue (half a period of slack: barrier phases jitter), and its park
// is expected within what is left of the budget.
inline bool shouldAwaitPark(const ParkRhythm& r, uint64_t nowTsc, uint64_t waitedTicks,
                            uint64_t budgetTicks) {
    if (budgetTicks == 0 || r.periodTicks == 0 || r.lastParkTsc == 0) return false;
    if (waitedTicks >= budgetTicks || nowTsc < r.lastParkTsc) return false;
    const uint64_t sincePark = nowTsc - r.lastParkTsc;
    if (sincePark >= r.periodTicks + r.periodTicks / 2) return false;  // overdue
    const uint64_t expectedIn = r.periodTicks > sincePark ? r.periodTicks - sincePark : 0;
    return expectedIn <= budgetTicks - waitedTicks;
}

}  // namespace arbrt::detail
