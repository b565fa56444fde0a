// Cores (scheduling domains) and carriers (the kernel threads that run them).
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "arbrt/sync.h"
#include "sched/cohort.h"
#include "sched/context.h"
#include "sched/context_pool.h"
#include "sched/idle_spin.h"
#include "sync/wait_queue.h"
#include "tls/tcb_blocks.h"

namespace arbrt::detail {

// What the context being resumed must do for the one that just switched out, once that one's
// registers are saved (so no other carrier can resume it before then).
enum class AfterSwitch : uint8_t {
    nothing,
    requeue,  // yield: make it runnable again
    queued,   // yield that already queued it (under the same lock as popping the next thread)
    park,     // block: commit the park unless a signal arrived meanwhile
    exit,     // it finished: publish its result, free it if detached
    rejoin,   // back from a blocking call whose core was lent away: runnable again, anywhere
};

struct SwitchRecord {
    Carrier* carrier;
    ThreadContext* from;  // null: the carrier's dispatcher
    AfterSwitch action;
};

// Core::sleeping values other than 0 (awake).
constexpr uint32_t kSleepingOnFutex = 1;
constexpr uint32_t kSleepingInEpoll = 2;

// One scheduling domain. Fields are grouped by writer so that cores do not false-share.
struct Core {
    int id = 0;

    // --- Run queues: FIFOs of runnable threads, normal ones (head/tail) and batch ones
    // (batchHead/batchTail, taken only when no normal thread is runnable here), and a list of
    // normal threads with a real-time priority (rtHead: highest queuedPriority first, FIFO among
    // equals, taken before anything else, runNext included; never in runNext themselves).
    // Guarded by queueLock; `queued` (all three), `batchQueued` and `rtHead` may be read without
    // it as hints (relaxed). `active` is written under queueLock and read anywhere: an inactive
    // (released) core accepts no threads. `reservedFor` (the exclusive thread that owns the core,
    // or null) is written under the policy's lock and queueLock and read anywhere: a reserved core
    // accepts only its owner. One cache line in all (checked below).
    alignas(64) SpinLock queueLock{LockRank::runQueue};
    std::atomic<bool> active{false};
    std::atomic<uint32_t> queued{0};
    std::atomic<uint32_t> batchQueued{0};
    ThreadContext* head = nullptr;
    ThreadContext* tail = nullptr;
    ThreadContext* batchHead = nullptr;
    ThreadContext* batchTail = nullptr;
    std::atomic<ThreadContext*> reservedFor{nullptr};
    std::atomic<ThreadContext*> rtHead{nullptr};

    // --- Timers: a binary min-heap on wakeupNs. Guarded by timerLock; nextDeadlineTsc (the
    // earliest deadline in TSC ticks, ~0 when empty) is read lock-free by dispatchers.
    alignas(64) SpinLock timerLock{LockRank::timerHeap};
    std::vector<ThreadContext*> timerHeap;
    std::atomic<uint64_t> nextDeadlineTsc{~uint64_t{0}};

    // --- Idle and release signalling (futex words), written by any thread.
    // `sleeping`: 0 awake, kSleepingOnFutex (the carrier sleeps on this word) or kSleepingInEpoll
    // (the carrier is the netpoller, blocked in the runtime's epoll: io_poller.cc). Set by the
    // carrier before it looks for work a last time; a waker exchanges it to 0 and wakes the carrier
    // the way the old value says (wakeIfSleeping).
    alignas(64) std::atomic<uint32_t> sleeping{0};
    // While sleeping: the TSC at which the carrier will wake by itself (~0: never; 0: awake).
    // Written by the carrier; read by alertKeeper().
    std::atomic<uint64_t> sleepUntilTsc{0};
    std::atomic<uint32_t> releaseRequested{0};
    std::atomic<uint32_t> parkWord{0};  // carrier sleeps on it while released
    WaitQueue releaseWaiters;           // releaseCore() callers

    // --- Lending (blocking.cc). `blockingSince` is the TSC at which the core's runner entered a
    // blocking system call (0: it is not in one; kLending: the monitor is lending the core away);
    // written by the runner and by the monitor (CAS). `lent` (futex word) is 1 while a spare
    // carrier runs the core; `lendBack` is set by the owner to ask for it back.
    std::atomic<uint64_t> blockingSince{0};
    std::atomic<uint32_t> lent{0};
    std::atomic<uint32_t> lendBack{0};
    // Preemption (preempt.cc): the monitor's request, contextSwitches + 1 when it asked (0: none);
    // consumed (exchanged) by the handler on the carrier running the core.
    std::atomic<uint64_t> preemptRequest{0};
    // TSC of the last preemption signal sent while no earlier request was pending (preempt.cc;
    // written by the monitor and the release watcher, relaxed: it only rate-limits re-sends).
    std::atomic<uint64_t> preemptSignalTsc{0};
    // Retake (retake.h): the system call the runner's carrier sleeps in, as the monitor read it,
    // and the address after its `syscall` instruction; written by the monitor before it sends a
    // retake request (preemptRequest with kRetakeRequest; release), read by the handler after
    // taking the request (acquire).
    std::atomic<long> retakeSyscall{-1};
    std::atomic<uintptr_t> retakeResumePc{0};

    // --- Go's "runnext": a thread woken by this core's running thread, run before the queue at the
    // next switch without touching the queue lock. Set and taken by the core's carrier; a thief may
    // take it (CAS) only after seeing it sit there across two of its idle passes with no switch on
    // this core in between (runNextStamp = contextSwitches when it was set), so a waker that keeps
    // computing cannot strand it. runNextStreak (owner-only) bounds consecutive picks of runNext
    // while the queue is non-empty, so two threads handing off to each other cannot starve the
    // queue.
    alignas(64) std::atomic<ThreadContext*> runNext{nullptr};
    std::atomic<uint64_t> runNextStamp{0};
    uint32_t runNextStreak = 0;
    // RuntimeOptions::dispatch == cohort; written before the carriers start, read at every pick.
    bool cohortDispatch = false;
    // Thief-side memory of the last runNext it saw on another core (owner-only).
    Core* watchedVictim = nullptr;
    ThreadContext* watchedThread = nullptr;
    uint64_t watchedStamp = 0;
    uint64_t watchedSinceTsc = 0;  // when the thief first saw that thread there

    // --- Owned by the core's runner (written only there; read racily for statistics). `owner` is
    // the carrier made for this core (immutable); `carrier` is the one running it now: the owner,
    // or a spare while the owner is lent out during a blocking call (written by the monitor and by
    // carriers handing the core back; read by anyone).
    alignas(64) Carrier* owner = nullptr;
    std::atomic<Carrier*> carrier{nullptr};
    ContextCache cache;
    StackBatch stackBatch;  // default stacks mapped ahead (stack.h); same rule as `cache`
    TcbBatch tcbBatch;      // TCB blocks mapped ahead (tcb_blocks.h); same rule as `cache`
    std::atomic<uint64_t> busyTicks{0};
    std::atomic<uint64_t> threadStarts{0};  // threads switched in here (estimation.cc)
    // Idle accounting for samplers (trace, core estimation): the TSC at which the dispatcher went
    // idle (0 while it runs threads or is released) and the idle ticks accumulated before it.
    // Written by the core's carrier; read racily by the monitor.
    std::atomic<uint64_t> idleSinceTsc{0};
    std::atomic<uint64_t> idleTicks{0};
    // How long this core polls when idle, learnt from its idle gaps (idle_spin.h; owner-only).
    IdleSpinLearner idleSpin;
    std::atomic<uint64_t> contextSwitches{0};
    std::atomic<uint64_t> resumedInPlace{0};  // parks resumed with no switch (waitInPlace)
    std::atomic<uint64_t> steals{0};
    std::atomic<uint64_t> threadsCreated{0};  // by threads running on this core
    // Cohort dispatch (cohort.h): the cohort this core runs (owner-only), and for statistics the
    // cohorts that reached two threads and the threads dispatched in those (written by the core's
    // runner, read racily by stats()).
    CohortState cohort;
    std::atomic<uint64_t> cohortsFormed{0};
    std::atomic<uint64_t> cohortThreads{0};
};

static_assert(offsetof(Core, timerLock) - offsetof(Core, queueLock) == 64,
              "the run queues share one cache line");

// A core's idle ticks so far, the current idle stretch included (exact at any moment, unlike
// busyTicks, which a running thread adds only when it returns to the dispatcher). Racy reads of
// two words: samplers (trace, estimation) clamp what they derive from it.
inline uint64_t idleTicksNow(const Core& core, uint64_t tsc) {
    const uint64_t since = core.idleSinceTsc.load(std::memory_order_relaxed);
    return core.idleTicks.load(std::memory_order_relaxed) +
           (since != 0 && tsc > since ? tsc - since : 0);
}

// A kernel thread created with the real pthread_create, running one core's dispatcher. A core's
// owner carrier is made at start-up; spare carriers are made by the monitor when a core must be
// lent while its runner is blocked in the kernel. Concurrency: every field is written only by the
// carrier itself, except that the monitor sets `core` and `arbiterCpu` of an idle spare before
// waking it through `spareWord`.
struct Carrier {
    SwitchRecord record{this, nullptr, AfterSwitch::nothing};  // the switch in progress
    Core* core = nullptr;       // owner: its core, always; spare: the core it runs, or null
    void* nativeTcb = nullptr;  // the TCB glibc gave this kernel thread
    fcontext_t dispatcherContext = nullptr;
    // Running user thread; null while dispatching. Written only by this carrier, with atomic_ref
    // relaxed stores at each switch; read plainly by it and through atomic_ref by others (the
    // release watcher, the monitor, the policy, signalling code): a snapshot that may be stale by
    // the time it is used, which every reader tolerates.
    ThreadContext* current = nullptr;
    // Idle ticks spent waiting in place (waitInPlace) on the stack of a thread that runThread()
    // started: runThread() takes them out of the core's busy time. Owner-only.
    uint64_t inPlaceIdleTicks = 0;
    // Arbiter mode: the cpu granted to this carrier, else -1. Written by this carrier (or the one
    // lending it a core) with atomic_ref relaxed stores; read by the release watcher the same way.
    int arbiterCpu = -1;
    pthread_t thread{};
    // Whether `thread` exists (to be joined): written by whoever creates it (the thread starting
    // the runtime, or the monitor for deferred carriers), read by stop() after it joined the
    // monitor.
    bool threadStarted = false;
    std::atomic<uint32_t> spareWord{0};  // spare: 1 once the monitor gave it a core
    Carrier* nextSpare = nullptr;        // idle-spare list link (under RuntimeState::spareLock)
    uint64_t baseSigmask = 0;            // its real signal mask while running user threads
    // Monitor-only (retake.cc): /proc/self/task/TID/syscall of this kernel thread, opened when
    // first needed (-1: not open), closed at stop.
    int syscallFileFd = -1;
    // Syscall user dispatch's selector for this kernel thread (syscall_dispatch.h), read by the
    // kernel at each system call from outside libc: trapped, except in the window after a clone
    // ran in place, which the SIGSYS handler opens and this carrier's next switch closes. Written
    // only on this kernel thread.
    std::atomic<uint8_t> syscallSelector{1 /*kSyscallsTrapped*/};
    // An interruption signal (embed::interruptCarrierOf) sent to this kernel thread and not yet
    // taken: set by senders (exchange, acq_rel), cleared by the handler on this thread
    // (interruptTaken, exchange, acq_rel), so the handler reads what every skipped sender
    // published. With it a sender sends only if none is in flight (or the one in flight is older
    // than kInterruptResendNs): the signal is real-time, every send queues one more, and a carrier
    // descheduled for a while took hundreds nested (SA_NODEFER) and overflowed its stack.
    alignas(64) std::atomic<uint32_t> interruptPending{0};
    std::atomic<uint64_t> interruptSentTsc{0};  // when the pending one was sent (rdtsc)
};

// --- Run queues and placement (core.cc).
// How a thread becomes runnable, which decides where it goes in its core's order.
enum class Wake : uint8_t {
    requeue,  // yield, migration: back of the queue, nobody else is woken
    wakeup,   // a timer or another core woke it: back of the queue; an idle core may be woken to
              // steal
    handoff,  // a thread on its own core woke or created it and will usually block soon: it may
              // take the core's runNext slot (Go's runnext), and an idle core may be woken to steal
};
// Makes `t` runnable on its home core, or on another allowed active core if that one was released,
// or, with no core active (arbiter mode), in the pending list until one is granted.
void enqueue(ThreadContext* t, Wake how);
// ThreadContext::queueClass values.
constexpr uint8_t kNormalQueue = 0;
constexpr uint8_t kBatchQueue = 1;
// The next thread this core should run (runNext, else the normal queue, else the batch queue), or
// null. Owner-only.
ThreadContext* takeNext(Core* core);
// takeNext() without the real-time list and without cohorts: runNext (within its streak), else the
// oldest normal thread, else the oldest batch thread. Owner-only.
ThreadContext* takeNextFifo(Core* core);
// takeNext() under cohort dispatch, after the real-time list (cohort.cc). Owner-only.
ThreadContext* takeNextCohort(Core* core);
// Takes the core's runNext thread for its runner, or null (it was stolen, or it may not run here
// and was sent elsewhere). Owner-only.
ThreadContext* takeRunNext(Core* core);
// Records a queued thread's resume tag for cohort scans (cohort dispatch only); called by the
// thread's own switch-out, before anything publishes it.
inline void noteResumeTag(ThreadContext* t) {
    t->resumeTag.store(resumeTag(reinterpret_cast<uintptr_t>(t->resumePoint)),
                       std::memory_order_relaxed);
}
// takeNext() for a normal thread that yields: a batch thread never takes the core from it.
ThreadContext* takeNextNormal(Core* core);
// Pops the oldest runnable thread of `core`'s normal queue, else of its batch queue, or null.
ThreadContext* dequeue(Core* core);
// Moves the runNext thread, if any, to the back of the queue (owner-only).
void flushRunNext(Core* core);
// hasRunnable(), hasRunnableFor(), normalQueued(), acceptsThread(): inline, below.
// For yield: pops the oldest runnable thread and queues `self` behind the others in one critical
// section (self->switching is set first). A normal `self` only swaps with a normal thread, a
// batch one with any (normal first) and goes behind the batch threads. Null (and nothing queued)
// when there is no such thread, or `core` is reserved for another thread.
ThreadContext* swapWithNext(Core* core, ThreadContext* self);
// Takes one runnable thread from another active core for `thief`: a normal thread if any core has
// one it may take, else a batch thread; null if none, or if `thief` is reserved.
ThreadContext* steal(Core* thief);
// A core for `t`: `preferred` if it accepts t (active, allowed, not reserved for another thread),
// else power-of-two-choices on queue length among those; with none, any active core that is not
// reserved for another thread, then any active one (the caller retries while a reservation
// changes); null when no core is active (arbiter mode with nothing granted).
Core* placeThread(const ThreadContext* t, int preferred);

// Moves a released core's queued threads to other active cores.
void migrateAway(Core* core);
// Empties the core's runNext slot and both run queues (caller holds its queueLock); returns their
// threads as one list linked by nextRunnable.
ThreadContext* takeAllRunnableLocked(Core* core);
// Called after `core`'s earliest deadline moved earlier while other threads wait to run there
// (they may compute past it): wakes the keeper (the lowest-numbered sleeping core, which fires the
// deadlines of busy cores) if it would otherwise sleep past the deadline.
void alertKeeper(Core* core);
// Wakes a core's carrier whether it is idle or parked (release requests, acquire, stop).
void wakeCarrier(Core* core);
// Wakes the core's carrier if it sleeps idle.
void wakeIfSleeping(Core* core);
// Wakes one sleeping active core other than `busy` (so it can steal), unless an idle core still
// polls. Orders the caller's earlier publication of work before its look (seq_cst fence).
void wakeIdleCoreForBalance(Core* busy);
// True when another active core has a runnable thread that `thief` might take; a hint.
bool othersHaveRunnable(const Core* thief);
// True when an active, unreserved core other than `self` has a runnable thread that `thief` might
// take (any thread when `thief` is null: whoever may take it); a hint, with no look at `self`'s
// own reservation.
bool threadsWaitBesides(const Core* self, const Core* thief);
// Arbiter mode: makes `core` active (threads that waited for any core move there).
void activateCore(Core* core);
// Arbiter mode: makes `core` inactive (it accepts no more threads); idempotent.
void deactivateCore(Core* core);
// Arbiter mode: if the arbiter wants this carrier's cpu back (one load from its shared page), marks
// the core for release and returns true.
bool pollArbiter(Carrier* c);
// Arbiter mode: a carrier's life: wait for a grant, dispatch until the arbiter asks for the core
// back, give it back, repeat until the runtime stops or the provider shuts down.
void runGrantedCores(Carrier* c);

// --- Lending cores during blocking calls (blocking.cc).
constexpr uint64_t kLending = 1;  // Core::blockingSince while the monitor lends the core away
// The Core::blockingSince stamp of a call entered at TSC `tsc`: bit 1 set, so never 0 (no call)
// nor kLending, whatever the reading.
constexpr uint64_t blockingStamp(uint64_t tsc) {
    return tsc | 2;
}
// The owner's dispatching, repeated: when its core was lent away during a blocking call, waits for
// it back and goes on. Returns when the runtime stops or (arbiter mode) the core is released.
void dispatchOwnCore(Carrier* owner);
// A spare carrier's life: wait for a core from the monitor, run it until its owner wants it back
// or it is lent on, repeat until the runtime stops.
void* spareCarrierMain(void* arg);
// The monitor thread: lends cores whose runner has been blocked in the kernel for a while to spare
// carriers when other threads wait to run there.
void* monitorMain(void* arg);
// The carrier `self`, about to make a call it knows will block (a retaken call: it slept there for
// retakeAfterNs already) under the overdue `stamp` it just wrote on its core, lends the core
// itself when threads wait there or its owner wants it back, to the owner or an idle spare: the
// monitor's look is not waited for. False (nothing waits, no idle spare, or the monitor won the
// race) leaves the lend to the monitor (blocking.cc).
bool lendOwnCoreNow(Carrier* self, uint64_t stamp);
// Called when a thread becomes runnable on `core`: if the core's runner is in a blocking call, the
// monitor is woken so it can lend the core without waiting out its back-off.
void nudgeMonitorFor(Core* core);
// Called where a quiet core becomes busy (its carrier woke, its runner's blocking call returned,
// it was acquired), after the seq_cst store, fence or RMW that made it so: wakes the monitor if it
// sleeps deep (blocking.cc). One load of a read-mostly line otherwise.
void wakeMonitorIfDeepAsleep();
// Standalone: a second user thread is alive (or a thread waits on a deferred core), so the
// deferred carriers are worth their kernel threads now; the first caller wakes the monitor to
// create them (blocking.cc).
void wantDeferredCarriers();
// Standalone: starts the monitor the first time it has work (runtime_state.h: monitorWanted).
void wantMonitor();
// Wakes the monitor, every spare and joins them (stop()).
void stopMonitorAndSpares();
// Starts the monitor thread (start()); false if it cannot be created.
bool startMonitor();

// --- Timers (timers.cc).
void addTimer(Core* core, ThreadContext* t, uint64_t deadlineNs);
// Removes t's timer if it is still pending (after an early wake-up): no stale entry is left.
void cancelTimer(ThreadContext* t);
// Wakes every thread whose deadline has passed; returns how many.
int fireExpiredTimers(Core* core);
// Nanoseconds until the core's earliest deadline (0 if due), or ~0 when it has none.
uint64_t timeToNextDeadline(Core* core);
// Moves a released core's pending timers to active cores (caller holds the runtime's releaseLock).
void migrateTimers(Core* from);

// --- Switching (switch.cc).
// Gives the core away from the calling user thread `self` and performs `action` for it once
// switched out.
void switchAway(ThreadContext* self, AfterSwitch action);
// Runs on the resumed context first thing: saves the previous context and performs its action.
void completeSwitch(transfer_t t);
// Like switchAway, but to `next` (already runnable, claimed by the caller, allowed on this core)
// without going through the run queue.
void switchTo(ThreadContext* self, ThreadContext* next, AfterSwitch action);
// Leaves the calling carrier (whose core was lent away while `self` was in a blocking call) for
// its dispatcher; `self` becomes runnable on its home core (or wherever it is allowed).
void rejoinAfterLend(ThreadContext* self);
// The blocking-call bracket (arbrt/io.h) of the running thread `self` (blocking.cc), open when its
// core carries a stamp or was lent away meanwhile (checked before a switch: switchTo,
// parkCurrent): closing it (clears the stamp, or, if the core was lent, leaves through
// rejoinAfterLend and returns on another carrier), and opening it again on the carrier that now
// runs `self`.
void leaveBlockingCall(ThreadContext* self);
void reopenBlockingCall(ThreadContext* self);
// Takes a parked thread straight to runnable without queueing it (the caller will run it). False if
// it is not parked (still parking, or running after a time-out) or the generation is stale.
bool claimParked(ThreadContext* t, uint32_t generation);
// Makes a parked thread runnable, or leaves a permit; ignored if `generation` is stale.
void signalContext(ThreadContext* t, uint32_t generation, Wake how = Wake::handoff);
// Parks the calling user thread until signalled (Arachne's block()).
void parkCurrent(ThreadContext* self);
// The dispatcher loop of a carrier (carrier.cc).
void runDispatcher(Carrier* carrier);
// Waits for work on the stack of `self`, a thread parking with nothing else runnable on its
// core, as the dispatcher's idle pass would (carrier.cc). Returns `self` when its permit came (it
// resumes without a switch), another claimed thread to switch to, or null when the park must go to
// the dispatcher after all: the core needs it (a release, a lend, stop, a context-pool refill), the
// thread must move, or the carrier would sleep other than as the netpoller.
ThreadContext* waitInPlace(Carrier* c, ThreadContext* self);

// --- Hints for the hot paths, inline: the library is position-independent, so an out-of-line
// call to one of its own exported functions goes through the PLT (a few ns on a yield).

// True when the core has a runnable thread (queues or runNext); a hint. Two loads.
inline bool hasRunnable(const Core* core) {
    return core->queued.load(std::memory_order_relaxed) != 0 ||
           core->runNext.load(std::memory_order_relaxed) != nullptr;
}

// Normal threads waiting in the queues (not counting runNext); a hint, read without the lock
// (the two counters may be a moment apart, so it saturates at 0). One line.
inline uint32_t normalQueued(const Core* core) {
    const uint32_t all = core->queued.load(std::memory_order_relaxed);
    const uint32_t batch = core->batchQueued.load(std::memory_order_relaxed);
    return all > batch ? all - batch : 0;
}

// True when a thread other than `self` (running on `core`) should have the core if `self` yields:
// any runnable thread for a batch thread, a normal one (queue or runNext) otherwise; a hint. With
// nothing runnable (a yield's common case) exactly hasRunnable()'s two loads. (A thread left
// running on a core reserved for another is made to switch by its `replace` flag.)
inline bool hasRunnableFor(const Core* core, const ThreadContext* self) {
    if (!hasRunnable(core)) return false;
    if (self->queueClass != kNormalQueue) return true;
    return normalQueued(core) != 0 || core->runNext.load(std::memory_order_relaxed) != nullptr;
}

// Whether `core` takes `t` now: active, and not reserved for another thread; a hint (pushes
// decide under the queue lock). Two loads of the core's queue line.
inline bool acceptsThread(const Core* core, const ThreadContext* t) {
    const ThreadContext* owner = core->reservedFor.load(std::memory_order_relaxed);
    return core->active.load(std::memory_order_relaxed) && (owner == nullptr || owner == t);
}

}  // namespace arbrt::detail
