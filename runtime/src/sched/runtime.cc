// Start-up, shutdown, core release/acquire and statistics.
#include <sched.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "arbiter/estimation.h"
#include "arbiter/release_watcher.h"
#include "arbiter/request_sender.h"
#include "arbrt/embed/host.h"
#include "arbrt/embed/platform.h"
#include "diag/trace.h"
#include "monitor/io_poller.h"
#include "monitor/retake.h"
#include "monitor/syscall_dispatch.h"
#include "platform/arch.h"
#include "sched/overflow.h"
#include "sched/preempt.h"
#include "sched/runtime_state.h"
#include "tls/glibc_tcb.h"

namespace arbrt {
namespace detail {

bool gHaveFsgsbase = false;
RuntimeState* gRuntime = nullptr;

namespace {

HostThreadApi gHost{&pthread_create, &pthread_join};

constexpr uint64_t kMaxIdleSpinNs = 1'000'000'000;
constexpr size_t kMinStackOption = 16 * 1024;
constexpr uint64_t kRunNextStealDelayNs = 3'000;  // see stealRunNext (core.cc)
constexpr uint64_t kMinTimeSliceNs = 100'000;
constexpr size_t kMaxStackOption = size_t(1) << 30;

std::optional<Error> validate(const RuntimeOptions& o) {
    if (o.numCores < 0 || o.numCores > kMaxCores) {
        return Error{Errc::invalidArgument,
                     "numCores must be between 0 (one per CPU) and " + std::to_string(kMaxCores)};
    }
    if (o.idleSpinNs > kMaxIdleSpinNs) {
        return Error{Errc::invalidArgument,
                     "idleSpinNs must be at most 1 s (an idle core must sleep)"};
    }
    if (o.coreProvider && (o.priority < 0 || o.priority >= arbclient::kPriorityLevels)) {
        return Error{Errc::invalidArgument, "priority must be between 0 (highest) and 7"};
    }
    if (o.preemptSignal < 0 || o.preemptSignal > 64) {
        return Error{Errc::invalidArgument, "preemptSignal must be 0 (off) or a signal number"};
    }
    if (o.preemptSignal != 0 && o.timeSliceNs < kMinTimeSliceNs) {
        return Error{Errc::invalidArgument, "timeSliceNs must be at least 100 us"};
    }
    if (o.releaseDeferNs > kMaxReleaseDeferNs) {
        return Error{
            Errc::invalidArgument,
            "releaseDeferNs must be at most 1 s (and well inside the arbiter's forced-reclaim "
            "timeout)"};
    }
    if (o.retakeAfterNs != 0 &&
        (o.retakeAfterNs < kMinRetakeAfterNs || o.retakeAfterNs > kMaxRetakeAfterNs)) {
        return Error{Errc::invalidArgument,
                     "retakeAfterNs must be 0 (off) or between 20 us and 1 s"};
    }
    if (o.dispatch != Dispatch::fifo && o.dispatch != Dispatch::cohort) {
        return Error{Errc::invalidArgument, "dispatch must be fifo or cohort"};
    }
    if (o.cohortMaxThreads < 1 || o.cohortMaxThreads > kMaxCohortThreads) {
        return Error{Errc::invalidArgument, "cohortMaxThreads must be between 1 and 1024"};
    }
    if (o.cohortMaxNs < kMinCohortNs || o.cohortMaxNs > kMaxCohortNs) {
        return Error{Errc::invalidArgument, "cohortMaxNs must be between 1 us and 1 s"};
    }
    if (o.defaultStackSize < kMinStackOption || o.defaultStackSize > kMaxStackOption) {
        return Error{Errc::invalidArgument, "defaultStackSize must be between 16 KiB and 1 GiB"};
    }
    return std::nullopt;
}

int cpusInAffinity() {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
    return CPU_COUNT(&set) > 0 ? CPU_COUNT(&set) : 1;
}

void* carrierMain(void* arg) {
    runAsCarrier(static_cast<Carrier*>(arg));
    return nullptr;
}

// A deferred carrier the monitor creates after the wake-ups below sees `stopping` at its first
// look; it is joined with the rest once the monitor (its only creator) is.
void stopCarriers(RuntimeState& rt) {
    rt.stopping.store(true, std::memory_order_release);
    for (int i = 0; i < rt.numCores; ++i) wakeCarrier(&rt.cores[i]);
    stopRequestSender();
    stopReleaseWatcher();
    stopMonitorAndSpares();
    for (int i = 0; i < rt.numCores; ++i) {
        if (rt.carriers[i].threadStarted) gHost.join(rt.carriers[i].thread, nullptr);
    }
    stopPoller();  // after every carrier that might wait on it or write its wake-up descriptor
    for (int i = 0; i < rt.numCores; ++i) {
        flushCache(&rt.cores[i].cache);
        releaseStackBatch(&rt.cores[i].stackBatch);
        releaseTcbBatch(&rt.cores[i].tcbBatch);
    }
}

}  // namespace

int hostCreateThread(pthread_t* thread, void* (*fn)(void*), void* arg) {
    return gHost.create(thread, nullptr, fn, arg);
}

int hostJoinThread(pthread_t thread) {
    return gHost.join(thread, nullptr);
}

int startCarrier(RuntimeState& rt, int i) {
    const int err = gHost.create(&rt.carriers[i].thread, nullptr, carrierMain, &rt.carriers[i]);
    rt.carriers[i].threadStarted = err == 0;
    return err;
}

// Builds the state and starts the carriers; the options are valid and the platform probed.
std::optional<Error> startRuntime(const RuntimeOptions& options, bool callerBecomesCarrierZero) {
    auto* rt = new RuntimeState;
    rt->options = options;
    rt->numCores = options.numCores ? options.numCores : cpusInAffinity();
    rt->cores = std::make_unique<Core[]>(size_t(rt->numCores));
    rt->carriers = std::make_unique<Carrier[]>(size_t(rt->numCores));
    rt->idleSpinTicks = ticksForNs(options.idleSpinNs);
    rt->runNextStealDelayTicks = ticksForNs(kRunNextStealDelayNs);
    rt->provider = options.coreProvider;
    rt->cohortBounds = {options.cohortMaxThreads,
                        std::max<uint64_t>(1, ticksForNs(options.cohortMaxNs))};
    // Standalone: every core runs from the start. Arbiter mode: none until granted.
    const bool activeAtStart = rt->provider == nullptr;
    for (int i = 0; i < rt->numCores; ++i) {
        rt->cores[i].id = i;
        rt->cores[i].cohortDispatch = options.dispatch == Dispatch::cohort;
        rt->cores[i].active.store(activeAtStart, std::memory_order_relaxed);
        rt->cores[i].owner = &rt->carriers[i];
        rt->cores[i].carrier.store(&rt->carriers[i], std::memory_order_relaxed);
        rt->carriers[i].core = &rt->cores[i];
    }
    rt->activeCores.store(activeAtStart ? uint32_t(rt->numCores) : 0);
    rt->policy.reset(activeAtStart ? uint32_t(rt->numCores) : 0);
    gRuntime = rt;
    std::string traceError;
    if (!options.tracePath.empty() && !openTrace(options.tracePath, &traceError)) {
        gRuntime = nullptr;
        delete rt;
        return Error{Errc::systemError, traceError};
    }
    traceEvent(TraceEvent::start, -1, -1, rt->numCores);
    for (int i = 0; activeAtStart && i < rt->numCores; ++i) traceEvent(TraceEvent::grant, i, -1, 1);
    startEstimation();  // before the first request: it sets the pool's starting demand
    // Arbiter mode: the first request (core_request.h), synchronously.
    if (auto err = sendInitialRequest()) {
        stopEstimation();
        closeTrace();
        gRuntime = nullptr;
        delete rt;
        return err;
    }
    initPreemption();
    if (options.rawSyscallHandler) {
        std::string why;
        if (!initSyscallDispatch(&why)) rt->syscallDispatchRefusal = why;
    }
    // Standalone: threads queued on a core whose carrier the monitor has not created yet are run
    // when it starts (or stolen by an idle carrier before that); nothing waits for it otherwise.
    // The monitor creates them once a second user thread is alive (wantDeferredCarriers).
    const int eagerCarriers = rt->provider ? rt->numCores : 1;
    rt->nextDeferredCarrier = eagerCarriers;  // the monitor's from here on
    rt->deferredCarriersWanted.store(eagerCarriers >= rt->numCores, std::memory_order_relaxed);
    // Standalone without a trace, the monitor waits until it has something to do (wantMonitor).
    const bool eagerMonitor = rt->provider || !options.tracePath.empty();
    rt->monitorWanted.store(eagerMonitor, std::memory_order_relaxed);
    rt->lendAfterTicks = ticksForNs(options.lendAfterNs);
    if (!startPoller() || (eagerMonitor && !startMonitor()) || !startReleaseWatcher() ||
        !startRequestSender()) {
        rt->stopping.store(true, std::memory_order_release);
        stopRequestSender();
        stopReleaseWatcher();
        stopMonitorAndSpares();
        stopPoller();
        stopEstimation();
        closeTrace();
        gRuntime = nullptr;
        delete rt;
        return Error{Errc::systemError,
                     "cannot create the runtime's epoll, monitor, release-watcher or request "
                     "thread"};
    }
    // A fork child's caller runs core 0 already; otherwise its carrier may wait for the
    // embedder's main thread (runCallerAsCoreZero) or the first thread creation
    // (startAwaitedCoreZero).
    const int coreZero = callerBecomesCarrierZero                        ? kCoreZeroCallerRuns
                         : options.coreZeroAwaitsCaller && !rt->provider ? kCoreZeroAwaitingCaller
                                                                         : kCoreZeroStarted;
    rt->coreZeroCarrier.store(coreZero, std::memory_order_relaxed);
    const int firstCarrier = coreZero == kCoreZeroStarted ? 0 : 1;
    for (int i = firstCarrier; i < std::min(rt->numCores, eagerCarriers); ++i) {
        if (int err = startCarrier(*rt, i)) {
            stopCarriers(*rt);
            gRuntime = nullptr;
            delete rt;
            return Error{Errc::systemError,
                         std::string("cannot create carrier threads: ") + std::strerror(err)};
        }
    }
    return std::nullopt;
}

void runAsCarrier(Carrier* c) {
    c->nativeTcb = threadPointer();
    writeTcbSlot(c->nativeTcb, kCarrierSlot, c);
    recordCarrierSignalMask(c);
    enableSyscallDispatch(c);
    AltStack altStack;  // for the stack-overflow report, on this kernel thread
    if (gRuntime->provider) {
        runGrantedCores(c);
    } else {
        dispatchOwnCore(c);
    }
    writeTcbSlot(c->nativeTcb, kCarrierSlot, nullptr);
}

}  // namespace detail

using namespace detail;

std::optional<Error> start(const RuntimeOptions& options) {
    if (gRuntime) return Error{Errc::alreadyRunning, "the arbrt runtime is already running"};
    if (auto err = validate(options)) return err;
    // The calibration's span runs while the probe and the overflow handler are set up (and, when
    // the embedding layer began it, while that layer prepared itself).
    const ClockCalibration calibration = takeEarlyClockCalibration();
    std::string why;
    if (!GlibcTcb::probe(&why)) return Error{Errc::unsupportedPlatform, why};
    gHaveFsgsbase = fsgsbaseAvailable();
    installOverflowHandler();
    finishClockCalibration(calibration);
    return startRuntime(options);
}

bool stop() {
    RuntimeState* rt = gRuntime;
    if (!rt || currentContext() || rt->liveThreads.load() != 0) return false;
    stopCarriers(*rt);
    stopEstimation();
    closeTrace();
    gRuntime = nullptr;
    delete rt;
    return true;
}

bool isRunning() {
    return gRuntime != nullptr;
}

void beginClockCalibration() {
    recordEarlyClockCalibration();
}

void setHostThreadApi(const HostThreadApi& api) {
    if (api.create) gHost.create = api.create;
    if (api.join) gHost.join = api.join;
}

// The CAS makes the caller and startAwaitedCoreZero() exclusive, and is done before prepare()
// creates the first user thread, whose launch publishes it to that thread's exit.
bool runCallerAsCoreZero(bool (*prepare)(void*), void* arg) {
    RuntimeState* rt = gRuntime;
    int expected = kCoreZeroAwaitingCaller;
    if (!rt || currentContext() ||
        !rt->coreZeroCarrier.compare_exchange_strong(expected, kCoreZeroCallerRuns,
                                                     std::memory_order_acq_rel)) {
        return false;
    }
    if (!prepare(arg)) {
        rt->coreZeroCarrier.store(kCoreZeroAwaitingCaller, std::memory_order_release);
        startAwaitedCoreZero(*rt);  // else the next thread creation tries again
        return false;
    }
    runAsCarrier(&rt->carriers[0]);
    waitUntilNoThreads();  // the runtime stopped (stop() refuses while threads live)
    std::exit(0);
}

bool detail::startAwaitedCoreZero(RuntimeState& rt) {
    int expected = kCoreZeroAwaitingCaller;
    if (!rt.coreZeroCarrier.compare_exchange_strong(expected, kCoreZeroStarted,
                                                    std::memory_order_acq_rel)) {
        return true;  // the caller runs it, or another creation started it
    }
    if (startCarrier(rt, 0) == 0) return true;
    rt.coreZeroCarrier.store(kCoreZeroAwaitingCaller, std::memory_order_release);
    return false;
}

void waitUntilNoThreads() {
    RuntimeState* rt = gRuntime;
    if (!rt || currentContext()) return;
    // Rare path (a main thread that called pthread_exit): poll the live count with a short sleep
    // rather than adding a wake-up to every thread exit.
    while (rt->liveThreads.load(std::memory_order_acquire) != 0) {
        timespec ts{0, 1'000'000};
        clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, nullptr);
    }
}

int numCores() {
    return gRuntime ? gRuntime->numCores : 0;
}

CoreSet activeCores() {
    CoreSet set;
    if (!gRuntime) return set;
    for (int i = 0; i < gRuntime->numCores; ++i) {
        if (gRuntime->cores[i].active.load(std::memory_order_relaxed)) set.set(i);
    }
    return set;
}

int releaseCore(int core) {
    RuntimeState* rt = gRuntime;
    if (!rt || core < 0 || core >= rt->numCores) return EINVAL;
    if (rt->provider) return EPERM;
    Core* c = &rt->cores[core];
    // Reserve the decrement first so two concurrent releases can never leave zero active cores.
    uint32_t active = rt->activeCores.load();
    do {
        if (active <= 1) return c->active.load() ? EBUSY : EALREADY;
    } while (!rt->activeCores.compare_exchange_weak(active, active - 1));
    if (!rt->policy.setActive(c, false)) {  // ends a reservation there (core_policy.h)
        rt->activeCores.fetch_add(1);
        return EALREADY;
    }
    Waiter w;
    initWaiter(&w);
    c->releaseWaiters.lock.lock();
    c->releaseWaiters.pushBack(&w);
    c->releaseWaiters.lock.unlock();
    c->releaseRequested.store(1, std::memory_order_release);
    wakeCarrier(c);
    waitOn(c->releaseWaiters, &w, kNoDeadline);
    return 0;
}

int acquireCore(int core) {
    RuntimeState* rt = gRuntime;
    if (!rt || core < 0 || core >= rt->numCores) return EINVAL;
    if (rt->provider) return EPERM;
    Core* c = &rt->cores[core];
    if (rt->policy.setActive(c, true)) return EALREADY;
    rt->activeCores.fetch_add(1);
    traceEvent(TraceEvent::grant, core, -1, 1);
    wakeCarrier(c);
    return 0;
}

RuntimeStats stats() {
    RuntimeStats s{};
    RuntimeState* rt = gRuntime;
    if (!rt) return s;
    s.threadsCreated = rt->threadsCreated.load();  // plus the per-core counts below
    s.liveThreads = rt->liveThreads.load();
    s.peakLiveThreads = rt->peakLiveThreads.load();
    for (int i = 0; i < rt->numCores; ++i) {
        s.contextSwitches += rt->cores[i].contextSwitches.load(std::memory_order_relaxed);
        s.resumedInPlace += rt->cores[i].resumedInPlace.load(std::memory_order_relaxed);
        s.steals += rt->cores[i].steals.load(std::memory_order_relaxed);
        s.coresLent = rt->coresLent.load(std::memory_order_relaxed);
        s.threadsCreated += rt->cores[i].threadsCreated.load(std::memory_order_relaxed);
        s.cohortsFormed += rt->cores[i].cohortsFormed.load(std::memory_order_relaxed);
        s.cohortThreads += rt->cores[i].cohortThreads.load(std::memory_order_relaxed);
    }
    s.preemptions = preemptionCount();
    s.trappedSyscalls = trappedSyscallCount();
    s.retakes = retakeCount();
    s.releasesAwaitingPark = rt->releasesAwaitingPark.load(std::memory_order_relaxed);
    s.releasesPreemptedAfterWaiting =
        rt->releasesPreemptedAfterWaiting.load(std::memory_order_relaxed);
    s.coresReserved = rt->policy.coresReserved();
    s.exclusiveFallbacks = rt->policy.fallbacks();
    const NetpollCounts netpoll = netpollCounts();
    s.readyByNetpoller = netpoll.readiedByNetpoller;
    s.readyByPollingCarrier = netpoll.readiedByPeek;
    s.readyByMonitor = netpoll.readiedByMonitor;
    return s;
}

uint64_t coreBusyNs(int core) {
    RuntimeState* rt = gRuntime;
    if (!rt || core < 0 || core >= rt->numCores) return 0;
    return ticksToNs(rt->cores[core].busyTicks.load(std::memory_order_relaxed));
}

}  // namespace arbrt
