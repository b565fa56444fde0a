// The runtime's process-wide state.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "arbclient/core_provider.h"
#include "arbiter/request_sender.h"
#include "arbrt/thread.h"
#include "sched/core.h"
#include "sched/core_policy.h"

namespace arbrt::detail {

// Created by start(), destroyed by stop(). Concurrency: the arrays and `options` are immutable
// while running; counters are atomics updated by any thread.
struct RuntimeState {
    RuntimeOptions options;
    int numCores = 0;
    std::unique_ptr<Core[]> cores;
    std::unique_ptr<Carrier[]> carriers;
    uint64_t idleSpinTicks = 0;
    uint64_t runNextStealDelayTicks = 0;  // core.cc: stealRunNext
    CohortBounds cohortBounds;            // cohort dispatch (cohort.h), from the options
    std::atomic<bool> stopping{false};

    // Idle-carrier bookkeeping, each counter on a line of its own, away from the thread counters
    // that every create and exit writes. spinningCores changes at every idle period (entry and
    // exit); sleepingCores only when a carrier sleeps or wakes, so while every idle carrier polls
    // its line stays shared in every cache, and the wakers' and spinners' "anyone asleep?" test
    // (wakeIdleCoreForBalance, wakeOneIfWorkIsLeft) reads it without a cache-line transfer.
    alignas(64) std::atomic<uint32_t> spinningCores{0};  // idle carriers still polling (will steal)
    alignas(64) std::atomic<uint32_t> sleepingCores{0};  // idle carriers asleep on their futex

    alignas(64) std::atomic<uint32_t> activeCores{0};
    SpinLock releaseLock{
        LockRank::coreRelease};  // one core release at a time (fixes timer lock order)

    // Arbiter mode: where grants come from (null in standalone mode), and the threads that became
    // runnable while no core was active (guarded by pendingLock; drained when a core is granted).
    arbclient::CoreProvider* provider = nullptr;
    SpinLock pendingLock{LockRank::pending};
    ThreadContext* pendingHead = nullptr;
    ThreadContext* pendingTail = nullptr;

    // Lending (blocking.cc): spare carriers (made on demand, up to kMaxSpareCarriers; idle ones in
    // a list under spareLock) and the monitor thread, which sleeps on monitorWord. Each spare is
    // allocated when made: all 256 up front were 48 KiB zeroed and a dozen page faults in the
    // start-up of every program, most of which never lend a core.
    static constexpr int kMaxSpareCarriers = 256;
    std::unique_ptr<Carrier> spares[kMaxSpareCarriers];
    int sparesMade = 0;  // written by the monitor only (spares[0, sparesMade) exist)
    SpinLock spareLock{LockRank::spare};
    Carrier* idleSpares = nullptr;
    pthread_t monitorThread{};
    // Whether the monitor thread exists: written (release) by whoever starts it (start-up, or the
    // creator of the program's second thread: wantMonitor), read (acquire) by stop(), which runs
    // after every thread that could start it.
    std::atomic<bool> monitorStarted{false};
    // Standalone mode starts only core 0's carrier before the program runs; the monitor creates
    // the others (startDeferredCarriers, blocking.cc) from this index on, off the program's
    // start-up path. Written by the thread starting the runtime before the monitor exists, then
    // by the monitor only. numCores when none is deferred (arbiter mode: every carrier waits for
    // its grant from the start).
    int nextDeferredCarrier = 0;
    // Whether the deferred carriers are wanted yet: set (once, by wantDeferredCarriers) when a
    // second user thread is alive or a thread is queued on another core than 0; until then a
    // single-threaded program runs on core 0's carrier alone (one kernel thread instead of one per
    // CPU, and no idle carriers polling). Read on every thread creation, placement and enqueue
    // (relaxed: a read-mostly hint) and by the monitor (acquire); true from the start when nothing
    // is deferred.
    std::atomic<bool> deferredCarriersWanted{false};
    // Whether the monitor is wanted yet (wantMonitor, blocking.cc). Standalone, it is made only
    // once the program gives it something to do: a second user thread alive (time slices, lending,
    // stranded work) or a thread queued on a deferred carrier's core (which it creates). A program
    // that never creates a thread (every command of a shell script, most fork children) pays no
    // kernel thread for it. True from the start in arbiter mode (core estimation, releases) and
    // with --trace (utilisation samples). Beside deferredCarriersWanted, which every creation
    // reads too: one read-mostly line; the exchange makes one caller the starter.
    std::atomic<bool> monitorWanted{false};
    // Who runs core 0's carrier: kCoreZeroStarted (a carrier thread), kCoreZeroAwaitingCaller (no
    // carrier yet: RuntimeOptions::coreZeroAwaitsCaller, the embedder's main thread will be it),
    // kCoreZeroCallerRuns (a kernel thread no host waits on runs it: a fork child's forking
    // thread, set at start-up, or the embedder's thread in runCallerAsCoreZero(); the last user
    // thread's exit then ends the process, finishExit). Leaves kCoreZeroAwaitingCaller by a CAS:
    // to kCoreZeroCallerRuns in runCallerAsCoreZero(), or to kCoreZeroStarted in
    // startAwaitedCoreZero() when a thread is created first (a program's constructor, or an
    // embedder that never calls it). Acquire loads on every thread creation (allocateThread),
    // where only kCoreZeroAwaitingCaller does anything, and on the last exit.
    std::atomic<int> coreZeroCarrier{0};
    uint64_t lendAfterTicks = 0;
    alignas(64) std::atomic<uint32_t> monitorWord{0};  // futex: 1 = look now
    std::atomic<bool> monitorNapping{false};           // sleeping longer than its shortest period
    // The monitor sleeps deep: every core was quiet (blocking.cc, sleepDeepWhileQuiet). Stored
    // seq_cst by the monitor before it looks at the cores; loaded seq_cst by whoever makes a quiet
    // core busy (wakeMonitorIfDeepAsleep), after the store or RMW that did it.
    std::atomic<bool> monitorDeepSleep{false};
    // Deep sleeps, and those a wake-up ended before their bound: written by the monitor only.
    std::atomic<uint64_t> monitorDeepSleeps{0};
    std::atomic<uint64_t> monitorDeepSleepsWoken{0};
    std::atomic<uint64_t> coresLent{0};  // blocking calls whose core was lent
    // Why raw system calls are not caught although the options asked for it (empty: they are, or
    // were not asked for). Written at start-up only.
    std::string syscallDispatchRefusal;

    // Fast release (release_watcher.cc), arbiter mode only.
    pthread_t releaseWatcherThread{};
    bool releaseWatcherStarted = false;
    // Changed and woken (private futex) by stopReleaseWatcher() after `stopping` is set; read by
    // the watcher before it checks `stopping` (releaseWatcherMain).
    std::atomic<uint32_t> releaseWatcherInterrupt{0};
    std::atomic<uint64_t> releasesAwaitingPark{0};           // written by the watcher only
    std::atomic<uint64_t> releasesPreemptedAfterWaiting{0};  // likewise

    alignas(64) std::atomic<uint64_t> threadsCreated{0};  // by kernel threads that are not carriers
    std::atomic<uint64_t> liveThreads{0};
    std::atomic<uint64_t> peakLiveThreads{0};

    // Thread classes: placement rules and exclusive reservations (core_policy.h); in arbiter mode
    // the thread that keeps the request in step with them (request_sender.h).
    alignas(64) CorePolicy policy;
    RequestSender requestSender;
};

extern RuntimeState* gRuntime;

// RuntimeState::coreZeroCarrier's states.
constexpr int kCoreZeroStarted = 0;
constexpr int kCoreZeroAwaitingCaller = 1;
constexpr int kCoreZeroCallerRuns = 2;

// A thread is being created while core 0's carrier still awaits the embedder's thread: starts it
// as an ordinary carrier thread instead (the creator may wait for the new thread before main()
// runs). False when the kernel refuses the thread (the creation fails with EAGAIN; the next one
// tries again).
bool startAwaitedCoreZero(RuntimeState& rt);

// The carrier of the calling kernel thread: the running user thread's carrier, or (in a dispatcher)
// the carrier whose TCB is current; null on other kernel threads.
Carrier* currentCarrier();

// Kernel threads of the runtime itself (carriers, spares, the monitor, the poller): made with the
// host's real pthread_create (see arbrt/embed/host.h).
int hostCreateThread(pthread_t* thread, void* (*fn)(void*), void* arg);
// Creates carrier i's kernel thread (runtime.cc); 0 or the pthread_create error.
int startCarrier(RuntimeState& rt, int i);
int hostJoinThread(pthread_t thread);

// Builds the runtime state and starts its carriers for validated options on a probed platform:
// the second half of start(), and the fork child's rebuild (fork.cc). Sets gRuntime on success.
// With `callerBecomesCarrierZero` (standalone only) core 0's carrier is not created: the caller
// runs it (runAsCarrier), and the process exits when its last user thread does.
std::optional<Error> startRuntime(const RuntimeOptions& options,
                                  bool callerBecomesCarrierZero = false);
// Runs `c`'s dispatcher on the calling kernel thread until the runtime stops (a carrier's body).
void runAsCarrier(Carrier* c);

// --- Clock (clock.cc).
// The TSC rate against CLOCK_MONOTONIC from two bracketed samples at least 100 us apart: begin
// takes the first, finish sleeps what is left of the span (nothing if the work between took that
// long) and takes the second. calibrateClock() does both at once.
struct ClockCalibration {
    uint64_t tsc, ns;
};
ClockCalibration beginClockCalibration();
// arbrt::beginClockCalibration() (embed/host.h) records a begin sample early; start() takes it
// (once), or a fresh one when none was recorded.
void recordEarlyClockCalibration();
ClockCalibration takeEarlyClockCalibration();
void finishClockCalibration(const ClockCalibration& begun);
void calibrateClock();
// The monitor, when it is due: the TSC rate over the whole run so far. Returns the CLOCK_MONOTONIC
// time of the next refinement (soon after start-up, then every second).
uint64_t refineClockRate();
uint64_t tscToNs(uint64_t tsc);
uint64_t nsToTsc(uint64_t ns);  // absolute nowNs()-timeline instant -> TSC reading
uint64_t ticksForNs(uint64_t ns);
uint64_t ticksToNs(uint64_t ticks);

}  // namespace arbrt::detail
