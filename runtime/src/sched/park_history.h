// Barrier-aware release: when the core arbiter asks for a core back, a thread of a barrier-heavy
// program that is about to wait at its barrier should lose the core there, not be preempted in the
// middle of a phase (moved mid-phase, it finishes its phase late on a core shared with another
// thread, and every other thread waits for it at the barrier). The runtime cannot see a program's
// phases, but it sees every park: a data-parallel thread runs a phase after each wake-up and parks
// at the barrier, so the length of its runs from a resume to the next park (its bursts) predicts
// when it will park next. The release watcher lets the runner reach that park when it is expected
// within the remaining deferral budget, and preempts it otherwise: a thread that never parked
// (compute-bound: no bursts) is preempted at once, so the fast release of a compute-bound tenant
// is unchanged. Bursts are measured from the resume, not from the previous park, so how long a
// thread waited at the barrier (which differs from thread to thread) does not blur them.
//
// Pure logic (tested in arbrt_logic_tests); the caller supplies TSC ticks.
#pragma once

#include <atomic>
#include <cstdint>

namespace arbrt::detail {

// A thread's park rhythm, kept in its ThreadContext. Written only by the thread itself when it
// parks and when it resumes from a park (switch.cc), in arbiter mode; read racily by the release
// watcher (a torn pair costs one wrong deferral decision, bounded by the budget).
struct ParkRhythm {
    uint64_t resumeTsc = 0;   // when it last resumed from a park; 0: not since its last park
    uint64_t burstTicks = 0;  // average run from a resume to the next park; 0: none measured yet
};

// Records a park at `nowTsc`: the burst since the resume joins an exponentially weighted average
// with weight 1/4, so one slow phase (a page-fault storm, a descheduled carrier) moves it by a
// quarter only. Called by the owning thread: it reads its own words plainly and stores each whole
// (relaxed) for the watcher.
inline void recordPark(ParkRhythm* r, uint64_t nowTsc) {
    if (r->resumeTsc != 0 && nowTsc > r->resumeTsc) {
        const uint64_t burst = nowTsc - r->resumeTsc;
        const uint64_t average =
            r->burstTicks == 0 ? burst : r->burstTicks - r->burstTicks / 4 + burst / 4;
        std::atomic_ref(r->burstTicks).store(average, std::memory_order_relaxed);
    }
    std::atomic_ref(r->resumeTsc).store(uint64_t{0}, std::memory_order_relaxed);
}

// Records the resume from a park at `nowTsc`: the next burst starts (owning thread; one relaxed
// store, as above).
inline void recordResume(ParkRhythm* r, uint64_t nowTsc) {
    std::atomic_ref(r->resumeTsc).store(nowTsc, std::memory_order_relaxed);
}

// Racy accessors for the release watcher and for resetting a recycled context: each word is read
// and written whole (relaxed atomics), the pair is not (see ParkRhythm).
inline ParkRhythm loadParkRhythm(const ParkRhythm* r) {
    return {std::atomic_ref(r->resumeTsc).load(std::memory_order_relaxed),
            std::atomic_ref(r->burstTicks).load(std::memory_order_relaxed)};
}
inline void storeParkRhythm(ParkRhythm* r, const ParkRhythm& value) {
    std::atomic_ref(r->resumeTsc).store(value.resumeTsc, std::memory_order_relaxed);
    std::atomic_ref(r->burstTicks).store(value.burstTicks, std::memory_order_relaxed);
}

// Whether the release watcher should leave a core asked back to its runner until the runner parks
// instead of preempting it now. `waitedTicks` is how long this release has already been deferred;
// `budgetTicks` the most a release may be deferred in all (0: never defer). Defers only when the
// runner has a rhythm, is running a burst that is not overdue (twice its usual length: phases
// jitter), and its park is expected within what is left of the budget.
inline bool shouldAwaitPark(const ParkRhythm& r, uint64_t nowTsc, uint64_t waitedTicks,
                            uint64_t budgetTicks) {
    if (budgetTicks == 0 || r.burstTicks == 0 || r.resumeTsc == 0) return false;
    if (waitedTicks >= budgetTicks || nowTsc < r.resumeTsc) return false;
    const uint64_t sinceResume = nowTsc - r.resumeTsc;
    if (sinceResume >= 2 * r.burstTicks) return false;  // overdue
    const uint64_t expectedIn = r.burstTicks > sinceResume ? r.burstTicks - sinceResume : 0;
    return expectedIn <= budgetTicks - waitedTicks;
}

}  // namespace arbrt::detail
