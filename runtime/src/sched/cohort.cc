// Cohort dispatch's glue to the run queues (the policy itself is cohort.h): a core's pick looks at
// its runNext thread and the first queued normal threads for one parked at the resume point of the
// cohort it runs, else takes the FIFO choice, which begins the next cohort.
#include "sched/cohort.h"
#include "platform/arch.h"
#include "sched/runtime_state.h"

namespace arbrt::detail {

static_assert(kResumeSlotOffset == kUserThreadSlot,
              "arbrt/embed/resume_point.h finds the context through the runtime's TCB slot");

namespace {

// Unlinks `t`, which follows `prev` (null: t is the head) in the core's normal queue; caller holds
// the queue lock. `queued` changes only under that lock, hence a plain load and store.
void unlinkNormalLocked(Core* core, ThreadContext* prev, ThreadContext* t) {
    (prev ? prev->nextRunnable : core->head) = t->nextRunnable;
    if (core->tail == t) core->tail = prev;
    core->queued.store(core->queued.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
}

// The member of the open cohort to run next, or null. Candidates in FIFO order: runNext (read
// racily: only this core's runner takes it, though a thief may too, which takeRunNext() settles),
// then the first queued normal threads, their tags read under the queue lock (one cache line
// each). A tag match is confirmed on the full resume point; a collision runs as FIFO would.
ThreadContext* takeCohortMember(Core* core, const CohortBounds& bounds, uint64_t now) {
    const CohortState& cohort = core->cohort;
    uint16_t tags[kCohortScan];
    ThreadContext* nodes[kCohortScan];
    if (ThreadContext* runNext = core->runNext.load(std::memory_order_relaxed)) {
        // The first candidate; the only one when it matches (taken without the lock).
        const uint16_t tag = runNext->resumeTag.load(std::memory_order_relaxed);
        if (chooseCohortCandidate(cohort, bounds, now, &tag, 1) == 0) return takeRunNext(core);
    }
    int n = 0;
    if (normalQueued(core) == 0) return nullptr;
    core->queueLock.lock();
    for (ThreadContext* q = core->head; q && n < kCohortScan; q = q->nextRunnable) {
        tags[n] = q->resumeTag.load(std::memory_order_relaxed);
        nodes[n++] = q;
    }
    const int i = chooseCohortCandidate(cohort, bounds, now, tags, n);
    ThreadContext* t = i >= 0 ? nodes[i] : nullptr;
    if (t && reinterpret_cast<uintptr_t>(t->resumePoint) == cohort.key) {
        unlinkNormalLocked(core, i > 0 ? nodes[i - 1] : nullptr, t);
    } else {
        t = nullptr;
    }
    core->queueLock.unlock();
    return t;
}

// Advances the core's cohort past `t`, about to run here, and counts cohorts for --stats. `t` is
// the caller's now (taken from the queues), so its resume point is stable.
void noteDispatch(Core* core, const CohortBounds& bounds, uint64_t now, const ThreadContext* t) {
    const CohortStep step =
        cohortAfter(core->cohort, bounds, now, reinterpret_cast<uintptr_t>(t->resumePoint));
    core->cohort = step.state;
    if (step.continued) {
        // Owner-only counters: a plain load and store, no locked increment.
        core->cohortThreads.store(
            core->cohortThreads.load(std::memory_order_relaxed) + (step.formed ? 2 : 1),
            std::memory_order_relaxed);
        if (step.formed) {
            core->cohortsFormed.store(core->cohortsFormed.load(std::memory_order_relaxed) + 1,
                                      std::memory_order_relaxed);
        }
    }
}

}  // namespace

// One TSC read per pick, and the scan only while the cohort is open.
ThreadContext* takeNextCohort(Core* core) {
    const CohortBounds& bounds = gRuntime->cohortBounds;
    const uint64_t now = rdtsc();
    ThreadContext* t = nullptr;
    if (cohortOpen(core->cohort, bounds, now)) t = takeCohortMember(core, bounds, now);
    if (!t) t = takeNextFifo(core);
    if (t) noteDispatch(core, bounds, now, t);
    return t;
}

}  // namespace arbrt::detail
