// Cohort dispatch (Larus & Parkes, "Using Cohort Scheduling to Enhance Server Performance", USENIX
// ATC 2002): threads parked at the same resume point (arbrt/embed/resume_point.h) run the same code
// on different requests, so a core that runs them back to back keeps that stage's code and data in
// its caches. The policy, pure and table-tested (runtime/tests/cohort_logic_test.cc):
//
//   - A core's cohort is the resume point of the thread it last dispatched from its queues, with
//     how many threads it has run so far and when it began.
//   - While the cohort is open (fewer than maxThreads run, younger than maxTicks, a known resume
//     point), the next thread is the first of the next kCohortScan candidates (in the order FIFO
//     dispatch would take them) parked at the same point.
//   - Otherwise, or when none is, the FIFO choice runs and begins the next cohort: cohorts are
//     served FIFO, and the thread FIFO would run next waits at most maxThreads - 1 picks (and
//     maxTicks) behind a cohort, so nothing starves.
//
// The runtime's glue (cohort.cc) keeps real-time threads first and leaves yields, stealing and the
// batch queue to the FIFO rules.
#pragma once

#include <cstdint>

namespace arbrt::detail {

// Candidates looked at per pick: the scan stays O(1) under the queue lock.
constexpr int kCohortScan = 8;

// The bounds of one cohort (RuntimeOptions::cohortMaxThreads / cohortMaxNs). A plain value.
struct CohortBounds {
    uint32_t maxThreads = 8;  // >= 1; 1 never continues a cohort (FIFO with statistics)
    uint64_t maxTicks = 0;    // TSC ticks since the cohort's first dispatch; >= 1
};

// The cohort a core runs. A plain value, owned by the core's runner (core.h).
struct CohortState {
    uint64_t key = 0;       // the resume point its threads were parked at; 0: none
    uint16_t tag = 0;       // resumeTag(key), what candidates are compared with first
    uint32_t size = 0;      // threads dispatched in it so far
    uint64_t startTsc = 0;  // when its first thread was dispatched
};

// A 16-bit digest of a resume point, never 0 for a non-zero one: a queue scan compares it, held in
// each thread's first cache line, and confirms a match on the full word. Small values (tests) map
// to themselves.
constexpr uint16_t resumeTag(uint64_t point) {
    const uint16_t folded = uint16_t(point ^ (point >> 16) ^ (point >> 32) ^ (point >> 48));
    return point == 0 ? 0 : folded == 0 ? 1 : folded;
}

// Whether the core's cohort may take one more thread at `now`: a known resume point, fewer than
// maxThreads run, and begun less than maxTicks ago.
constexpr bool cohortOpen(const CohortState& s, const CohortBounds& b, uint64_t now) {
    return s.key != 0 && s.size < b.maxThreads && now - s.startTsc < b.maxTicks;
}

// The pick: the index among `n` candidates (their resume tags, in the order FIFO dispatch would
// take them; n <= kCohortScan) of the first that continues the open cohort, or -1 when none does
// or the cohort is closed: then the FIFO choice runs.
constexpr int chooseCohortCandidate(const CohortState& s, const CohortBounds& b, uint64_t now,
                                    const uint16_t* tags, int n) {
    if (!cohortOpen(s, b, now)) return -1;
    for (int i = 0; i < n && i < kCohortScan; ++i) {
        if (tags[i] == s.tag) return i;
    }
    return -1;
}

// What dispatching a thread parked at `point` does to the core's cohort.
struct CohortStep {
    CohortState state;
    bool formed = false;     // the cohort just reached two threads
    bool continued = false;  // the thread joined the running cohort (else it began a new one)
};

// The cohort after dispatching a thread parked at `point` at `now`: the same cohort, one larger,
// when it was open and the point is its key; otherwise a new cohort of one begins.
constexpr CohortStep cohortAfter(const CohortState& s, const CohortBounds& b, uint64_t now,
                                 uint64_t point) {
    CohortStep step;
    if (point != 0 && point == s.key && cohortOpen(s, b, now)) {
        step.state = s;
        ++step.state.size;
        step.formed = step.state.size == 2;
        step.continued = true;
        return step;
    }
    step.state = CohortState{point, resumeTag(point), 1, now};
    return step;
}

}  // namespace arbrt::detail
