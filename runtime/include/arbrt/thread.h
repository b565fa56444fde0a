// User threads, cores and the runtime's lifecycle.
#pragma once

#include <signal.h>

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "arbrt/errors.h"
#include "arbrt/policy/estimator.h"

namespace arbclient {
class CoreProvider;
}

namespace arbrt {

// Upper bound on cores one process can use (fake arbiter backends simulate machines this large).
constexpr int kMaxCores = 256;
using CoreSet = std::bitset<kMaxCores>;

// Upper bound of RuntimeOptions::releaseDeferNs. The runtime does not know the arbiter's
// forced-reclaim timeout (10 ms by default, settable): keeping the budget well inside it is the
// embedder's part (arbrun allows at most 5 ms).
constexpr uint64_t kMaxReleaseDeferNs = 1'000'000'000;

// Bounds of RuntimeOptions::retakeAfterNs (when not 0): the monitor's shortest nap, and a second.
inline constexpr uint64_t kMinRetakeAfterNs = 20'000;
inline constexpr uint64_t kMaxRetakeAfterNs = 1'000'000'000;

// How a core picks the next thread to run (RuntimeOptions::dispatch).
enum class Dispatch : uint8_t {
    fifo,    // runNext, then the oldest runnable thread
    cohort,  // prefer threads parked at the resume point just run (arbrt/embed/resume_point.h)
};

// Bounds of RuntimeOptions::cohortMaxThreads and cohortMaxNs.
inline constexpr uint32_t kMaxCohortThreads = 1024;
inline constexpr uint64_t kMinCohortNs = 1'000, kMaxCohortNs = 1'000'000'000;

struct RuntimeOptions {
    // Cores (and carriers) to create; 0 means one per CPU in the process's affinity mask. May
    // exceed the number of CPUs (tests simulate larger machines that way).
    int numCores = 0;
    // How long an idle carrier polls for work before sleeping on a futex. Bounded: never spins
    // forever.
    uint64_t idleSpinNs = 50'000;
    // How long a user thread may stay in a blocking system call (bracketed by
    // enterBlockingCall/exitBlockingCall) before the monitor lends its core to a spare carrier,
    // when other threads wait to run there (Go's sysmon hands a P off after 20 us).
    uint64_t lendAfterNs = 20'000;
    // Default stack size of a user thread (virtual; committed lazily), like glibc's 8 MiB.
    size_t defaultStackSize = 8u << 20;
    // Contexts (stack + TCB) kept for reuse per core whatever their use. An exited thread's
    // context is always pooled with its stack and TCB; those beyond this many per core that sat
    // unused for a second lose them (the monitor unmaps them), so a program that keeps thousands
    // of threads and replaces them creates at pool speed, and one whose threads are gone gives
    // the memory back.
    size_t pooledContextsPerCore = 128;
    // Cores granted by a core arbiter (not owned; must outlive the runtime, and must be shut down
    // before stop() so carriers waiting for a grant return). numCores is then the most cores the
    // process may ever use, one carrier each; no core runs threads until the arbiter grants it, and
    // releaseCore()/acquireCore() belong to the arbiter (EPERM). Null: standalone.
    arbclient::CoreProvider* coreProvider = nullptr;
    int priority = 3;       // with coreProvider: the priority level (0 highest) of the request
    uint32_t minCores = 0;  // with coreProvider: fewest cores worth having (0: no minimum)
    // Preemption, the safety net for threads that compute without calling the runtime: when a
    // core's runner has not switched for timeSliceNs while other threads wait there (and no idle
    // core took them), the monitor sends preemptSignal to its carrier, and the thread yields at
    // once if it was interrupted at a safe point (see onPreemptSignal). 0: cooperative only.
    // With installPreemptHandler the runtime installs its own handler for that signal (the
    // program must not use it); otherwise the embedder's handler calls onPreemptSignal. The slice
    // is short (1 ms, below the kernel's own) because threads that spin-wait for each other
    // (OpenMP, Redis's I/O threads, hand-written barriers) hand over only when preempted: with
    // 10 ms, redis-server --io-threads 4 on 2 cores served 6x fewer requests than natively; with
    // 1 ms more than natively. It costs a computing thread nothing while nobody waits.
    int preemptSignal = 0;
    bool installPreemptHandler = false;
    uint64_t timeSliceNs = 1'000'000;
    // With preemption on: the safety net for a blocking system call nobody caught (one libc makes
    // internally, or any raw call where syscall user dispatch is missing;
    // runtime/src/monitor/retake.h). When a core's runner has slept in the kernel this long while
    // threads wait there, and the call may be re-issued (a futex wait without a timeout, a read or
    // write, accept, wait4, ...), the call is interrupted and re-issued as a blocking call, and its
    // core lent to a spare carrier. 0: off; else between kMinRetakeAfterNs and kMaxRetakeAfterNs.
    uint64_t retakeAfterNs = 100'000;
    // Barrier-aware release (arbiter mode, with preemption on): when a core is asked back while its
    // runner is expected to park (wait at a barrier, a lock, a condition) within this long, judged
    // from how regularly it parked so far, the core is released at that park instead of by
    // preempting the thread mid-phase; a thread that never parks is preempted at once. The most a
    // release is held back; 0: never (always preempt). At most kMaxReleaseDeferNs; keep it well
    // inside the arbiter's forced-reclaim timeout (10 ms by default), or the arbiter takes the core
    // by force first.
    uint64_t releaseDeferNs = 1'000'000;
    // Arbiter mode: how many cores to ask for. Null: every core the process may use, always. With
    // an estimator (a replaceable policy object, runtime/policy), the runtime samples its cores'
    // counters on the monitor thread and the request follows the estimate, within minCores and
    // numCores. Shared: the runtime keeps a reference while it runs.
    std::shared_ptr<policy::CoreEstimator> estimator;
    // A CSV timeline of the cores (grants, releases, requests, per-core utilisation every 10 ms;
    // format in runtime/src/diag/trace.h), written while the runtime runs. Empty: none. A fork
    // child does not inherit it.
    std::string tracePath;
    // System calls issued by the `syscall` instruction outside libc (syscall user dispatch, Linux
    // 5.11+; rules in runtime/src/monitor/syscall_dispatch.h): non-null turns dispatch on for every
    // carrier, and a user thread that issues such a call runs this handler instead, in normal
    // context, with the call's number and arguments; it returns the call's raw result (-errno on
    // failure) and may block like any interposed call. The embedder's SIGSYS handler must pass
    // the signal to onSyscallDispatchSignal, and no carrier may block SIGSYS. Where the kernel
    // lacks the feature the runtime starts without it (syscallDispatchActive() says so).
    long (*rawSyscallHandler)(long number, const long args[6]) = nullptr;
    // Cohort dispatch (Larus & Parkes, USENIX ATC 2002; runtime/src/sched/cohort.h): when a core
    // picks its next thread, it prefers one parked at the same resume point as the thread it ran
    // last (the same stage of another request), among the next few it would take, for at most
    // cohortMaxThreads threads (1 to kMaxCohortThreads) and cohortMaxNs (kMinCohortNs to
    // kMaxCohortNs) per cohort; then the FIFO choice runs and begins the next cohort. Real-time
    // priorities, yields and stealing keep their rules.
    Dispatch dispatch = Dispatch::fifo;
    uint32_t cohortMaxThreads = 8;
    uint64_t cohortMaxNs = 100'000;
    // Standalone: start() creates no thread for core 0's carrier; the embedder's thread that runs
    // the program's main() becomes it (runCallerAsCoreZero, arbrt/embed/host.h), so a program
    // starts without a thread creation and a hand-over between kernel threads, which a loaded
    // host can delay by milliseconds. A thread created before that call (a constructor's) starts
    // the carrier thread as usual. Ignored in arbiter mode.
    bool coreZeroAwaitsCaller = false;
};

// For the handler of RuntimeOptions::preemptSignal on a carrier (async-signal-safe): true when the
// signal was the runtime's preemption request, consumed (the caller should do nothing else for
// it); if the interrupted thread is at a safe point, `ucontext` is changed so that it yields as
// soon as the handler returns. Safe points: outside the runtime's own object, libc, the dynamic
// loader, libstdc++, libgcc_s and libunwind, and not inside a signal handler. So a program linked
// with the runtime is preempted only in code of its other objects (the preload library has no such
// limit).
bool onPreemptSignal(void* ucontext);
// For the embedder's signal handlers on a carrier (async-signal-safe): if the user thread running
// there was interrupted at a safe point (as preemption defines it), changes `ucontext` so that it
// runs the resume hook (setPreemptResumeHook) in normal context as soon as the handler returns,
// and then its interrupted code, without yielding. True if so, or if it is already on its way to
// the hook (preempted by the same signal); false otherwise (the caller acts later).
bool interruptAtSafePoint(void* ucontext);
// For the embedder's SIGSYS handler (async-signal-safe): true when the signal was a system call
// trapped by syscall user dispatch (si_code SYS_USER_DISPATCH), now dealt with: `ucontext` then
// either holds the call's result or leads into the runtime's trampoline. False for any other
// SIGSYS, which is the program's.
bool onSyscallDispatchSignal(siginfo_t* info, void* ucontext);
// Whether raw system calls are being caught (RuntimeOptions::rawSyscallHandler was set and the
// platform allowed it).
bool syscallDispatchActive();
// Called on a preempted thread right before it resumes its interrupted code, in normal (not signal)
// context: where the embedder acts on what would have interrupted the thread at that instruction
// natively (asynchronous cancellation, pending signals). It may unwind (pthread_exit). Null: none.
void setPreemptResumeHook(void (*hook)());

// Starts the carriers. Returns an error (and starts nothing) on bad options or an unsupported
// platform.
std::optional<Error> start(const RuntimeOptions& options = {});
// Stops the carriers after every user thread has exited; returns false (stopping nothing) if user
// threads are still alive.
bool stop();
bool isRunning();

namespace detail {
struct ThreadContext;
}

// A handle to a user thread. The generation makes a handle stale once its thread has exited and
// been joined (or detached): operations through a stale handle fail with ESRCH instead of touching
// the context's next occupant.
struct ThreadId {
    detail::ThreadContext* context = nullptr;
    uint32_t generation = 0;

    explicit operator bool() const { return context != nullptr; }
    friend bool operator==(const ThreadId&, const ThreadId&) = default;
};

// Guard size meaning "one page" (the default, like glibc's).
constexpr size_t kDefaultGuard = ~size_t{0};

// How a thread is placed (ARCHITECTURE.md, "core policy"; the rules are in core_policy.h).
enum class ThreadClass : uint8_t {
    normal,     // the shared pool of cores
    exclusive,  // a core of its own: nothing else runs on its carrier while it holds it; it never
                // leaves it. One core always stays shared: with none to spare the thread runs as
                // normal (counted in RuntimeStats::exclusiveFallbacks) until one can be reserved
    batch,      // runs on a core only when no normal thread is runnable there; in arbiter mode the
                // cores only batch threads need are requested one priority level lower
};

struct ThreadAttributes {
    int core = -1;          // run on this core; -1: place by power-of-two-choices among `allowed`
    CoreSet allowed{};      // cores the thread may run on; empty: all cores
    size_t stackSize = 0;   // 0: RuntimeOptions::defaultStackSize; rounded up to whole pages
    bool detached = false;  // resources freed at exit; cannot be joined
    // Bytes of PROT_NONE guard below the stack, rounded up to pages; 0: none.
    size_t guardSize = kDefaultGuard;
    // Non-null: the thread runs on the caller's memory [stackAddr, stackAddr + stackSize) (at least
    // 16 KiB), which the runtime never unmaps, pools or guards; the caller keeps it until the
    // thread has been joined (or, detached, has exited). Null: the runtime maps the stack.
    void* stackAddr = nullptr;
    ThreadClass threadClass = ThreadClass::normal;
    // Real-time priority, 1 (lowest) to kMaxPriority, as SCHED_FIFO/RR's; 0: none. See
    // setThreadPriority().
    int priority = 0;
};

// The highest real-time priority (SCHED_FIFO/RR's range is 1-99).
constexpr int kMaxPriority = 99;

// Entry point in C form: what pthread_create hands over.
using ThreadFunction = void* (*)(void*);

// Creates a user thread running fn(arg). Returns a null handle with `*err` set to EAGAIN (out of
// memory or address space), EINVAL (bad attributes: core, allowed set, class) or EPERM (runtime
// not running).
ThreadId spawn(const ThreadAttributes& attributes, ThreadFunction fn, void* arg,
               int* err = nullptr);

// Creates a user thread running an arbitrary callable with copies of its arguments. The callable
// and the arguments are stored at the top of the new thread's stack, so creation allocates nothing.
template <typename F, typename... Args>
ThreadId createThreadWith(const ThreadAttributes& attributes, F&& f, Args&&... args);

template <typename F, typename... Args>
ThreadId createThread(F&& f, Args&&... args) {
    return createThreadWith(ThreadAttributes{}, std::forward<F>(f), std::forward<Args>(args)...);
}

template <typename F, typename... Args>
ThreadId createThreadOn(int core, F&& f, Args&&... args) {
    ThreadAttributes attributes;
    attributes.core = core;
    return createThreadWith(attributes, std::forward<F>(f), std::forward<Args>(args)...);
}

// Changes a live thread's class. It takes effect at the thread's next switch (a block, a yield,
// an exit: it never moves while it runs), whoever calls it. Returns 0, ESRCH (stale or null
// handle) or EINVAL (no such class).
int setThreadClass(ThreadId thread, ThreadClass threadClass);
// The core reserved for an exclusive thread, or -1 (not exclusive, waiting for a core to reserve,
// or a stale handle). A snapshot: the core may be lost (released) right after.
int reservedCoreOf(ThreadId thread);

// Sets a thread's real-time priority (0: none; 1-kMaxPriority). Within a core, whenever the next
// thread to run is chosen, a runnable normal-class thread with a higher priority goes before one
// with a lower priority, and every one with a priority before those without (FIFO among equals);
// a runner whose priority is above every thread waiting on its core is preempted only after
// kRealtimeSliceFactor time slices. A yield still lets the next thread of its core run, whatever
// its priority, and batch-class threads keep their class. Across cores nothing is ordered (an idle
// core steals the highest-priority thread first). Takes effect the next time the thread becomes
// runnable. Returns 0, EINVAL (priority out of range) or ESRCH (stale handle, or the thread has
// exited).
int setThreadPriority(ThreadId thread, int priority);
// The thread's real-time priority, or -1 for a stale handle or a thread that has exited.
int threadPriority(ThreadId thread);
// How many time slices a thread with a real-time priority above every thread waiting on its core
// runs before it is preempted for them (the kernel's real-time throttling leaves other threads 5%
// of a CPU; this leaves them one slice in 21).
constexpr int kRealtimeSliceFactor = 20;

// Waits for the thread to exit and frees it. Returns 0, ESRCH (stale or null handle), EINVAL
// (detached or already being joined) or EDEADLK (joining itself). Callable from any kernel thread.
int join(ThreadId thread, void** result = nullptr);
// Non-blocking join: EBUSY while the thread runs.
int tryJoin(ThreadId thread, void** result = nullptr);
// Join with an absolute deadline on nowNs()'s timeline: ETIMEDOUT when it passes.
int joinUntil(ThreadId thread, uint64_t deadlineNs, void** result = nullptr);
int detach(ThreadId thread);
// join() for a user thread that signals or cancellation may interrupt: returns EINTR (still
// joinable, nothing consumed) when interrupted() holds, checked before every block; whoever makes
// it true wakes the joiner with signal(). Otherwise as join().
int joinInterruptible(ThreadId thread, void** result, bool (*interrupted)());
// The kernel tid of the carrier running `thread` right now, or 0 when it is not running (or the
// handle is stale). A snapshot: the thread may switch out at once; callers that signal the carrier
// must check on arrival which thread it runs.
int kernelTidOf(ThreadId thread);

// The calling user thread; a null handle on a kernel thread that is not a user thread.
ThreadId self();

// Storage the embedding layer (the preload library) keeps per user thread, kThreadExtensionBytes
// long, 64-byte aligned, zeroed when the thread is created. The runtime never reads it; whoever
// stores there documents who may write it. Null for a null handle (threadExtension) or on a kernel
// thread that is not a user thread (selfExtension). Valid as long as the handle is live.
constexpr size_t kThreadExtensionBytes = 256;
void* threadExtension(ThreadId thread);
void* selfExtension();
// What the embedding layer stored in a context's extension storage is handed to this function just
// before the storage is zeroed for the context's next thread (no handle to the previous thread is
// valid any more), so it can free what it allocated there. Null: nothing is called. Set it before
// creating threads; the runtime calls it on the creating thread.
void setExtensionReset(void (*reset)(void* extension));

// The stack a live user thread runs on: [low, low + size), of which the lowest `guard` bytes are
// its guard (0 for a caller-provided stack).
struct StackBounds {
    void* low = nullptr;
    size_t size = 0;
    size_t guard = 0;
};
// False (and *out untouched) for a null or stale handle.
bool threadStack(ThreadId thread, StackBounds* out);
// Whether the thread is detached (created so, or detach()ed since). False for a stale handle.
bool isDetached(ThreadId thread);
// Per-thread CPU clocks cost a TSC read per context switch, so they run only once asked for: the
// first enableCpuClocks() (or threadCpuNs()) starts them. From then on a thread's clock counts the
// time it spends switched in on a carrier (wall time while switched in, so it includes carrier
// preemption and blocking system calls it made); time before that is not counted (the caller's
// own clock starts at once, other running threads' at their next switch). Idempotent, cheap.
void enableCpuClocks();
// CPU time of the thread in nanoseconds, as counted above (enables the clocks if they are off).
// Any thread may ask; 0 for a null handle.
uint64_t threadCpuNs(ThreadId thread);
// A number naming the thread's context (< 2^24 in practice): unique among live threads, reused
// after the thread is gone. threadAtSlot() maps it back to the live thread (null when the slot
// holds none, which includes a thread that exited and was joined or detached).
uint32_t threadSlot(ThreadId thread);
ThreadId threadAtSlot(uint32_t slot);

// Ends the calling user thread with `result` (thread_local destructors run first). On a kernel
// thread that is not a user thread this does nothing and returns.
void exit(void* result);
// Lets other runnable threads on this core run; returns at once if there are none.
void yield();
// What a program's sched_yield() means: like yield(), but when no other thread can run on this
// core the carrier gives its CPU to the kernel (sched_yield), as a native thread would. Without
// it, a thread spinning on sched_yield keeps its carrier on the CPU for a whole kernel time slice
// while the carrier of the thread it waits for is queued behind it (a loaded machine).
void yieldCpu();
// Sleeps for at least `ns` nanoseconds (a user thread parks; a kernel thread calls nanosleep).
void sleepFor(uint64_t ns);
void sleepUntil(uint64_t deadlineNs);

// Arachne's block/signal: block() parks the caller until signal() is called for it. A signal that
// arrives before block() is remembered (one permit), so it is never lost; block() may also return
// spuriously, so callers re-check their condition. signal() through a stale handle does nothing.
void block();
// Like block(), but also returns once nowNs() >= deadlineNs.
void blockUntil(uint64_t deadlineNs);
void signal(ThreadId thread);

// The core the caller runs on, or -1 on a kernel thread that is not a carrier.
int currentCore();
int numCores();
// Cores currently running user threads (all cores in standalone mode, unless released).
CoreSet activeCores();

// Moves every thread off `core` (runnable ones at once, the running one at its next switch, blocked
// and sleeping ones when they wake) and parks the core's carrier. Returns when the core is empty:
// 0, EINVAL (no such core), EBUSY (it is the last active core), EALREADY (already released) or
// EPERM (a core arbiter manages the cores).
int releaseCore(int core);
// Lets a released core run threads again (placement and stealing fill it). 0, EINVAL or EALREADY.
int acquireCore(int core);

struct RuntimeStats {
    uint64_t threadsCreated;
    uint64_t liveThreads;
    uint64_t peakLiveThreads;
    uint64_t contextSwitches;
    // Parks that ended with no switch: the thread parked with nothing else to run on its core, its
    // carrier waited for work on the thread's own stack, and the thread's own wake-up came first.
    uint64_t resumedInPlace;
    uint64_t steals;           // runnable threads taken by an idle core from a busy one
    uint64_t coresLent;        // blocking calls during which the core was lent to a spare carrier
    uint64_t preemptions;      // threads switched out at a safe point by the preemption signal
    uint64_t trappedSyscalls;  // system calls from outside libc caught by syscall user dispatch
    uint64_t retakes;          // calls nobody caught, re-issued as blocking calls (retakeAfterNs)
    // Arbiter mode: cores asked back whose release waited for the runner's park (barrier-aware
    // release), and of those, the ones whose runner had to be preempted after all (it did not park
    // within the budget).
    uint64_t releasesAwaitingPark;
    uint64_t releasesPreemptedAfterWaiting;
    uint64_t coresReserved;       // cores reserved for exclusive threads (every reservation)
    uint64_t exclusiveFallbacks;  // times an exclusive thread had to run as normal: no core could
                                  // be reserved (at creation, after a reclassification, or after
                                  // its core was released)
    // Cohort dispatch: cohorts that reached two threads run back to back, and the threads run in
    // them (mean size = cohortThreads / cohortsFormed). 0 under FIFO dispatch.
    uint64_t cohortsFormed;
    uint64_t cohortThreads;
    // Readiness waits (io.h) ended by an event, by who saw it: the idle carrier waiting on the
    // runtime's epoll (the netpoller), a carrier polling before it sleeps, or the monitor while
    // every carrier was busy (each of those waited up to the monitor's bound).
    uint64_t readyByNetpoller;
    uint64_t readyByPollingCarrier;
    uint64_t readyByMonitor;
};
RuntimeStats stats();

// Busy time per core in nanoseconds since start (time the carrier ran user threads).
uint64_t coreBusyNs(int core);

namespace detail {

// Where a templated thread's closure lives: at the top of its stack, below `limit`.
void* reserveClosureSpace(ThreadContext* context, size_t size, size_t align);
ThreadContext* allocateThread(const ThreadAttributes& attributes, int* err);
// Makes the thread runnable. With `exclusiveFallback`, reports whether an exclusive thread got no
// core of its own (it runs as normal until one can be reserved).
ThreadId launchThread(ThreadContext* context, const ThreadAttributes& attributes,
                      void* (*trampoline)(void*), void* closure, bool* exclusiveFallback = nullptr);

template <typename Closure>
void* runClosure(void* raw) {
    auto* closure = static_cast<Closure*>(raw);
    std::apply([](auto& f, auto&... args) { std::invoke(f, std::move(args)...); }, *closure);
    closure->~Closure();
    return nullptr;
}

}  // namespace detail

template <typename F, typename... Args>
ThreadId createThreadWith(const ThreadAttributes& attributes, F&& f, Args&&... args) {
    using Closure = std::tuple<std::decay_t<F>, std::decay_t<Args>...>;
    detail::ThreadContext* context = detail::allocateThread(attributes, nullptr);
    if (!context) return {};
    void* space = detail::reserveClosureSpace(context, sizeof(Closure), alignof(Closure));
    auto* closure = new (space) Closure(std::forward<F>(f), std::forward<Args>(args)...);
    return detail::launchThread(context, attributes, &detail::runClosure<Closure>, closure);
}

}  // namespace arbrt
