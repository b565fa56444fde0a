// Per-core timer heaps for sleeps and timed waits. A thread is in at most one heap at a time; every
// heap operation holds that core's timerLock, and a thread's (timerCore, heapIndex) only change
// under it.
#include <algorithm>
#include <atomic>

#include "arbrt/time.h"
#include "platform/arch.h"
#include "sched/runtime_state.h"

namespace arbrt::detail {
namespace {

bool earlier(const ThreadContext* a, const ThreadContext* b) {
    return a->wakeupNs < b->wakeupNs;
}

void place(std::vector<ThreadContext*>& heap, size_t i, ThreadContext* t) {
    heap[i] = t;
    t->heapIndex = int32_t(i);
}

void siftUp(std::vector<ThreadContext*>& heap, size_t i) {
    ThreadContext* t = heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!earlier(t, heap[parent])) break;
        place(heap, i, heap[parent]);
        i = parent;
    }
    place(heap, i, t);
}

void siftDown(std::vector<ThreadContext*>& heap, size_t i) {
    ThreadContext* t = heap[i];
    const size_t n = heap.size();
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && earlier(heap[child + 1], heap[child])) ++child;
        if (!earlier(heap[child], t)) break;
        place(heap, i, heap[child]);
        i = child;
    }
    place(heap, i, t);
}

// Removes heap[i]; caller holds the lock. `owner` becomes the thread's timerCore: null normally,
// the same core while migrating (so a concurrent cancelTimer() waits for the lock and then looks
// again).
void removeAt(Core* core, size_t i, Core* owner = nullptr) {
    auto& heap = core->timerHeap;
    ThreadContext* gone = heap[i];
    ThreadContext* last = heap.back();
    heap.pop_back();
    gone->heapIndex = -1;
    std::atomic_ref(gone->timerCore).store(owner, std::memory_order_release);
    if (i < heap.size()) {
        place(heap, i, last);
        siftDown(heap, i);
        siftUp(heap, size_t(last->heapIndex));
    }
}

void publishNextDeadline(Core* core) {
    const auto& heap = core->timerHeap;
    core->nextDeadlineTsc.store(heap.empty() ? ~uint64_t{0} : nsToTsc(heap.front()->wakeupNs),
                                std::memory_order_relaxed);
}

void insertLocked(Core* core, ThreadContext* t) {
    std::atomic_ref(t->timerCore).store(core, std::memory_order_release);
    core->timerHeap.push_back(t);
    siftUp(core->timerHeap, core->timerHeap.size() - 1);
    publishNextDeadline(core);
}

}  // namespace

// A new earliest deadline on a core that has other threads to run may be stranded behind one that
// computes without calling the runtime: make sure a sleeping core will fire it (alertKeeper).
void addTimer(Core* core, ThreadContext* t, uint64_t deadlineNs) {
    core->timerLock.lock();
    t->wakeupNs = deadlineNs;
    insertLocked(core, t);
    const bool earliest = t->heapIndex == 0;
    core->timerLock.unlock();
    if (earliest && hasRunnable(core)) alertKeeper(core);
}

void cancelTimer(ThreadContext* t) {
    // timerCore changes only under the old core's lock (migration); lock, then confirm it is still
    // ours.
    for (;;) {
        Core* core = std::atomic_ref(t->timerCore).load(std::memory_order_acquire);
        if (!core) return;
        core->timerLock.lock();
        if (t->timerCore == core) {
            removeAt(core, size_t(t->heapIndex));
            publishNextDeadline(core);
            core->timerLock.unlock();
            return;
        }
        core->timerLock.unlock();
    }
}

int fireExpiredTimers(Core* core) {
    const uint64_t deadline = core->nextDeadlineTsc.load(std::memory_order_relaxed);
    if (deadline == ~uint64_t{0} || rdtsc() < deadline) return 0;  // common case: no TSC read
    constexpr int kBatch = 32;
    ThreadContext* due[kBatch];
    uint32_t generations[kBatch];
    int n = 0;
    const uint64_t now = nowNs();              // the TSC only hinted; CLOCK_MONOTONIC decides
    if (!core->timerLock.tryLock()) return 0;  // another dispatcher is firing them
    auto& heap = core->timerHeap;
    while (!heap.empty() && heap.front()->wakeupNs <= now && n < kBatch) {
        ThreadContext* t = heap.front();
        generations[n] = t->generation();
        due[n++] = t;
        removeAt(core, 0);
    }
    if (!heap.empty() && heap.front()->wakeupNs <= now) {
        core->nextDeadlineTsc.store(0, std::memory_order_relaxed);  // more due: next pass
    } else {
        publishNextDeadline(core);
    }
    core->timerLock.unlock();
    for (int i = 0; i < n; ++i) {
        due[i]->eventWake.store(1, std::memory_order_relaxed);  // not a hand-off (idle_spin.h)
        signalContext(due[i], generations[i], Wake::wakeup);    // deadline order
    }
    return n;
}

uint64_t timeToNextDeadline(Core* core) {
    const uint64_t deadlineTsc = core->nextDeadlineTsc.load(std::memory_order_relaxed);
    if (deadlineTsc == ~uint64_t{0}) return ~uint64_t{0};
    const uint64_t now = rdtsc();
    return deadlineTsc <= now ? 0 : tscToNs(deadlineTsc) - tscToNs(now);
}

// Moves every pending timer of a released core to other active cores. Called with rt.releaseLock
// held, so only one migration holds two timer locks at a time (no lock-order cycle).
void migrateTimers(Core* from) {
    // No active core (arbiter mode, last core taken): the timers stay; any dispatcher fires every
    // core's due timers, so they run as soon as a core is granted again.
    if (gRuntime->activeCores.load(std::memory_order_acquire) == 0) return;
    from->timerLock.lock();
    while (!from->timerHeap.empty()) {
        ThreadContext* t = from->timerHeap.back();
        const uint64_t deadline = t->wakeupNs;
        removeAt(from, from->timerHeap.size() - 1, from);
        Core* to = placeThread(t, -1);
        to->timerLock.lock();
        t->wakeupNs = deadline;
        insertLocked(to, t);
        const bool earliest = t->heapIndex == 0;
        to->timerLock.unlock();
        // The new owner may sleep with no deadline (its heap was empty) or a later one: it must
        // look again, or the timer fires only when something else wakes it. A busy owner is
        // covered as addTimer() covers it.
        if (earliest) {
            wakeIfSleeping(to);
            if (hasRunnable(to)) alertKeeper(to);
        }
    }
    publishNextDeadline(from);
    from->timerLock.unlock();
}

}  // namespace arbrt::detail
