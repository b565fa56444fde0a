// A user thread's context slot: saved registers, TCB, stack, scheduling and join state.
#pragma once

#include <boost/context/detail/fcontext.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "arbrt/embed/resume_point.h"
#include "arbrt/sync.h"
#include "arbrt/thread.h"
#include "sched/park_history.h"
#include "sched/stack.h"
#include "sync/wait_queue.h"

namespace arbrt::detail {

struct Core;
struct Carrier;
using boost::context::detail::fcontext_t;
using boost::context::detail::transfer_t;

// runState = generation << 32 | phase | permit. The generation makes every CAS fail once the
// context has been recycled, so a late signal can never wake the context's next occupant.
enum RunPhase : uint64_t {
    kRunnable = 0,  // running, or in a run queue
    kParking = 1,   // switching out to park; registers not saved yet
    kParked = 2,    // registers saved; only a signal makes it runnable again
};
constexpr uint64_t kPhaseMask = 3;
constexpr uint64_t kPermit =
    4;  // a signal arrived while not parked: the next block() returns at once

// lifecycle = generation << 32 | JoinPhase.
enum JoinPhase : uint64_t {
    kJoinable = 0,
    kJoining = 1,   // a joiner waits in `joiner`
    kDetached = 2,  // freed at exit
    kExited = 3,    // result ready; freed by join (or detach)
    kFree = 4,      // in the pool; handles to it are stale (see kFreedByJoin)
    kExiting = 5,  // its joiner was woken before the final switch; kExited once it is off its stack
};
constexpr uint64_t kJoinMask = 7;
// Beside kFree (outside kJoinMask): a join freed the context, not a detach. glibc marks a joined
// thread's descriptor (tid -1), so a later join or detach through its pthread_t says ESRCH where
// one through a detached thread's says EINVAL; the preload reaches freed contexts through the TCB.
constexpr uint64_t kFreedByJoin = 8;

// ThreadContext::cpuClock's flag: the thread is running (TSC readings never reach bit 63).
constexpr uint64_t kRunningBit = uint64_t{1} << 63;

inline uint64_t packState(uint32_t generation, uint64_t bits) {
    return (uint64_t{generation} << 32) | bits;
}
inline uint32_t generationOf(uint64_t word) {
    return static_cast<uint32_t>(word >> 32);
}

// Concurrency: `savedContext`, `tcb`, `carrier` are written only by the carrier switching the
// thread in or out; `nextRunnable` only under its core's queue lock; timer fields only under
// timerCore->timerLock; `runState` and `lifecycle` by CAS from any thread. Contexts are never freed
// (a stale handle may still read `lifecycle`); their stacks and TCBs are pooled or unmapped.
struct alignas(64) ThreadContext {
    // --- Switch-hot: touched on every context switch (one cache line).
    fcontext_t savedContext = nullptr;  // valid while the thread is not running
    void* tcb = nullptr;                // this thread's %fs base
    // Carrier running the thread; valid while it runs. Stored (atomic_ref, relaxed) by the carrier
    // switching it in; read by others through atomic_ref acquire, checked against carrier->current.
    Carrier* carrier = nullptr;
    Core* core = nullptr;  // home core: where it is queued when it becomes runnable
    ThreadContext* nextRunnable = nullptr;
    std::atomic<uint64_t> runState{0};
    std::atomic<uint64_t> lifecycle{packState(0, kFree)};
    // Set by a yield that queued the thread before switching out; cleared once its registers are
    // saved. Only a thief can pop such a thread early, and it waits for the flag to clear.
    std::atomic<bool> switching{false};
    // Which run queue of its core it joins (kNormalQueue, kBatchQueue); written only by the thread
    // itself at a switch, or by its creator before launch (core_policy.h), so never while queued.
    uint8_t queueClass = 0;
    // Non-zero when the thread must re-place itself at its next switch (a class change was asked
    // for, its reserved core was lost, or it waits for a core to reserve). Set by any thread
    // (relaxed: the thread reads the rest under the policy's lock), cleared by the thread itself.
    std::atomic<uint8_t> replace{0};
    // What its placement reflects (core_policy.h: kPlacedNormal, ...), read at every exit, hence
    // here. Written under the policy's lock by the thread itself or its creator before launch; a
    // core's loss changes it from exclusive to exclusive-waiting only, so whether it is normal
    // changes only on the thread itself, which reads it without the lock.
    uint8_t placedClass = 0;
    // Real-time priority (1-99: SCHED_FIFO/RR's; 0: none), which orders its core's run queue
    // (core.h). Written by any thread (setThreadPriority; relaxed, a lone byte), read when the
    // thread is queued; a change takes effect the next time the thread becomes runnable.
    std::atomic<uint8_t> rtPriority{0};
    // The priority it was queued with in its core's real-time list: written under that core's
    // queue lock, read there and racily by the monitor (sliceFor).
    std::atomic<uint8_t> queuedPriority{0};
    // Cohort dispatch (cohort.h): resumeTag(resumePoint) as it was when the thread last switched
    // out, so a core scanning its queue for threads of the cohort it runs reads only this line of
    // each. Written only by the thread's own switch-out (switch.cc, cohort dispatch only); read
    // under its core's queue lock, or racily by the core's runner for its runNext thread (relaxed:
    // a stale tag only misses or mis-suggests one cohort member, confirmed on the full word).
    std::atomic<uint16_t> resumeTag{0};
    // CPU-time clock, in TSC ticks: while the thread runs, kRunningBit | (the TSC reading at which
    // it would have had zero CPU time); otherwise its accumulated running time. Written only by
    // completeSwitch() on the carrier switching the thread in or out; read by any thread
    // (threadCpuNs). One word, so a reader never sees a half-updated pair.
    std::atomic<uint64_t> cpuClock{0};

    // --- Timers (sleeps, timed waits): guarded by timerCore->timerLock. `timerCore` itself is
    // stored with atomic_ref release under the old core's lock (insert, migration) and read with
    // atomic_ref acquire by cancelTimer(), which then locks that core and confirms it.
    uint64_t wakeupNs = 0;
    Core* timerCore = nullptr;
    int32_t heapIndex = -1;  // position in timerCore's heap, -1 when not in one
    uint32_t slot = 0;       // this context's number (contextAtSlot), fixed when its slab is made
    // Where the program resumes when the interposed call it is in returns: the call's return
    // address into the program (arbrt/embed/resume_point.h), 0 outside such calls. Threads parked
    // at the same resume point are the same stage of different requests (cohort dispatch,
    // cohort.h). Written only by the thread itself (ResumePointScope), read by the core that
    // dispatches it (cohort dispatch only) while it is runnable, when nothing writes it. In the
    // line the timers write when a sleeper wakes, so often in cache where the thread becomes
    // runnable.
    void* resumePoint = nullptr;

    // --- Creation and exit.
    void* entryArg = nullptr;
    void* result = nullptr;
    // The joiner's slot: claimed by CAS (null -> its Waiter) before lifecycle becomes kJoining, so
    // of two racing joiners only one can register; cleared by that joiner if it gives up (time-out,
    // lifecycle changed under it), reset when the context is launched again. The exiting thread
    // reads it after seeing kJoining (acquire), which the claim (acq_rel) happened before.
    std::atomic<Waiter*> joiner{nullptr};
    CoreSet allowed;  // cores it may run on (all bits set: any)
    // Class and placement (core_policy.h): the core reserved for this exclusive thread, where it
    // must stay (null: none; `allowed` is unchanged by a reservation), beside `allowed` so that
    // the checks of both touch one line. Changes under the policy's lock, by the thread itself, by
    // its creator before launch, or by a core's loss (which also sets `replace`); stored with
    // atomic_ref (release) once the thread is visible, since reservedCoreOf() and placement read
    // it from any thread (atomic_ref; acquire where the core's state is used next).
    Core* reservedCore = nullptr;
    bool reusedTcb = false;  // TCB held an earlier thread: reset libc's per-thread state at entry
    // The preemption trampoline was entered by interruptAtSafePoint: run the resume hook without
    // yielding. Written by the signal handler on the thread's carrier, read and cleared by the
    // thread itself in the trampoline right after.
    bool hookOnly = false;
    // The pooled TCB was made by refillContextPool() and never held a thread: the next occupant
    // treats it as new (no reset, libc's ctype set-up at entry). Written under the pool's rules
    // (only by whoever holds the context outside any list: the refiller, the acquirer, strip()).
    bool freshTcb = false;
    // The class setThreadClass() asked for (any thread), applied by the thread at its next switch.
    std::atomic<uint8_t> wantedClass{0};
    // Non-zero when an event last made it runnable, not another thread: readiness (the netpoll,
    // io_poller.cc) or its timer (timers.cc). Such work must not teach the core that runs it to
    // poll (idle_spin.h, resolve). Set (relaxed) by the netpoll or the timer before the thread is
    // queued or handed over, which orders it for the carrier that takes it; read and cleared by the
    // carrier that runs it after an idle period (runThread), never on other switches: this line is
    // otherwise read-mostly. A hint: a value left from an earlier readiness event misjudges one
    // idle period.
    std::atomic<uint8_t> eventWake{0};
    // The id of the core whose carrier waits for work on this thread's own stack while the thread
    // parks (waitInPlace, carrier.cc: the thread stays kParking meanwhile, so only its permit can
    // wake it), else -1; an id, to fit beside eventWake. Stored only by that carrier, before a
    // seq_cst fence and a look at the permit; signalContext() reads it after a fence once it has
    // left a permit on a kParking thread, and wakes that core if it sleeps (wakeWaiterInPlace).
    // Dekker's pairing: the carrier sees the permit, or the signaller sees this and wakes it.
    std::atomic<int16_t> waitingOnCore{-1};
    static_assert(kMaxCores <= INT16_MAX, "waitingOnCore holds a core id");
    Stack stack;
    void* closureTop = nullptr;  // where the stack for the entry frame begins (below any closure)
    ThreadContext* nextFree = nullptr;  // pool link
    ThreadFunction entry = nullptr;
    // Where a preempted thread resumes, or kReissueBlocking when the handler sent the thread into
    // the system-call trampoline to re-issue the call it slept in (retake.h): written by the
    // preemption handler on its carrier, read (and the marker cleared) by the thread itself in the
    // trampoline right after.
    uint64_t preemptedPc = 0;
    // How long it runs between a resume and its next park (park_history.h): written by the thread
    // itself when it parks and resumes in arbiter mode, reset at creation; read racily by the
    // release watcher.
    ParkRhythm parkRhythm;

    // --- The embedding layer's per-thread storage (arbrt::threadExtension): zeroed at creation;
    // its owner (the preload library) documents the concurrency of what it keeps there.
    alignas(64) unsigned char extension[kThreadExtensionBytes];

    uint32_t generation() const { return generationOf(lifecycle.load(std::memory_order_acquire)); }
};
static_assert(offsetof(ThreadContext, queuedPriority) < 64,
              "the class and priority bytes are switch-hot");
static_assert(sizeof(ThreadContext) == 512, "contexts are 512 bytes (8 lines): keep it so");
static_assert(offsetof(ThreadContext, resumeTag) < 64, "a queue scan reads one line per thread");
static_assert(offsetof(ThreadContext, resumePoint) == kResumePointOffset,
              "arbrt/embed/resume_point.h writes the resume point at this offset");

// The ThreadContext of the calling user thread, or null on any other kernel thread: one load
// through %fs (see arch.h), valid wherever the thread migrates, since its TCB moves with it.
ThreadContext* currentContext();

// Starts the per-thread CPU clocks (switch.cc; what arbrt::enableCpuClocks does).
void startCpuClocks();
// The thread's CPU time so far in TSC ticks (switch.cc): its clock word, plus the current run if it
// is running now. Callable from any thread.
uint64_t cpuTicksOf(const ThreadContext* t);

}  // namespace arbrt::detail
