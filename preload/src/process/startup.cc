// Start-up: reads the configuration, starts the runtime (or decides to run natively, saying why
// once), and runs the program's main() as a user thread.
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include "arbclient/client.h"
#include "arbconfig/config.h"
#include "arbconfig/report_lines.h"
#include "arbrt/arbrt.h"
#include "arbrt/embed/host.h"
#include "arbrt/embed/platform.h"
#include "arbrt/embed/tls.h"
#include "arbrt/policy/arachne_estimator.h"
#include "arbrt/policy/fast_estimator.h"
#include "io/raw_syscall.h"
#include "io/raw_syscalls.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "libc/stdio_locks.h"
#include "process/fork.h"
#include "process/own_runtime.h"
#include "process/setxid.h"
#include "signals/kernel_sigaction.h"
#include "signals/signal_queue.h"
#include "signals/signals.h"
#include "threads/cancel.h"
#include "threads/classes.h"

namespace arbrun {
namespace {

std::atomic<int> gMode{int(Mode::undecided)};
// Whether findMainArena found glibc's arena word (written once at start-up, before main's thread).
bool gMainArena = false;
std::atomic<bool> gStarting{false};
// Written once by decideMode(), read-only afterwards. Constructed on first use: interposed calls
// can arrive from other libraries' constructors before this file's dynamic initialisers have run.
arbconfig::Config& config() {
    static arbconfig::Config instance;
    return instance;
}

void vlog(const char* fmt, va_list ap) {
    char line[512];
    int n = std::snprintf(line, sizeof line, "arbrun: ");
    n += std::vsnprintf(line + n, sizeof line - size_t(n), fmt, ap);
    if (n > int(sizeof line) - 2) n = int(sizeof line) - 2;
    line[n++] = '\n';
    (void)!write(STDERR_FILENO, line, size_t(n));
}

// Whether something accepts connections at the arbiter's socket; the reason when not.
bool arbiterReachable(const std::string& path, std::string* why) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) {
        *why = "path too long";
        return false;
    }
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *why = std::strerror(errno);
        return false;
    }
    const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    if (!ok) *why = std::strerror(errno);
    close(fd);
    return ok;
}

// The kernel threads this library runs (carriers, monitor, helper, the thread that waits for
// main()), never the program's own, by kernel tid: a thread-local flag would not do, since a
// carrier's %fs is a user thread's TCB while it runs one and often while it idles. Each slot is
// claimed by its thread (compare-exchange from 0) and cleared when that thread ends; read by
// signal handlers. A thread that finds no free slot is simply not known (it never holds a flood).
constexpr int kLibraryThreadSlots = 512;
std::atomic<int> gLibraryThreads[kLibraryThreadSlots];

void registerLibraryKernelThread() {
    const int tid = int(rawSyscall(SYS_gettid));
    for (std::atomic<int>& slot : gLibraryThreads) {
        int expected = 0;
        if (slot.compare_exchange_strong(expected, tid, std::memory_order_acq_rel)) return;
    }
}

void unregisterLibraryKernelThread() {
    const int tid = int(rawSyscall(SYS_gettid));
    for (std::atomic<int>& slot : gLibraryThreads) {
        int expected = tid;
        if (slot.compare_exchange_strong(expected, 0, std::memory_order_acq_rel)) return;
    }
}

// The core arbiter's client lives as long as the process (carriers use it until exit).
arbclient::CoreArbiterClient* gArbiter = nullptr;

// The client's monitor thread must be a kernel thread: create it with the real pthread_create.
bool startKernelThread(std::function<void()> body, std::string* error) {
    auto* heapBody = new std::function<void()>(std::move(body));
    pthread_t thread;
    const int err = ARBRUN_REAL(pthread_create)(
        &thread, nullptr,
        [](void* raw) -> void* {
            std::unique_ptr<std::function<void()>> fn(static_cast<std::function<void()>*>(raw));
            (*fn)();
            return nullptr;
        },
        heapBody);
    if (err != 0) {
        delete heapBody;
        *error = std::strerror(err);
        return false;
    }
    pthread_detach(thread);
    return true;
}

// The core estimator the configuration names, over [minCores, maxCores]. The launcher validated
// the settings with the same bounds; should the estimator still refuse them (an environment set
// by hand), the process asks for all its cores, as without an estimator, and says why once.
std::shared_ptr<arbrt::policy::CoreEstimator> makeEstimator(const arbconfig::EstimatorSettings& s,
                                                            uint32_t minCores, uint32_t maxCores) {
    const arbrt::policy::CoreLimits limits{std::max<uint32_t>(1, minCores), maxCores};
    try {
        if (s.kind == arbconfig::Estimator::fast) {
            return std::make_shared<arbrt::policy::FastEstimator>(arbrt::policy::FastParams{
                limits, uint64_t(s.checkPeriodUs) * 1000, uint64_t(s.idleGraceUs) * 1000});
        }
        return std::make_shared<arbrt::policy::ArachneEstimator>(arbrt::policy::ArachneParams{
            limits, uint64_t(s.windowMs) * 1'000'000, s.loadFactor, s.hysteresisPct / 100.0});
    } catch (const std::invalid_argument& e) {
        logWarning("%s; asking the arbiter for every core instead", e.what());
        return nullptr;
    }
}

// Connects to the core arbiter (cores then come from it) or says once why the process runs
// standalone.
void connectArbiter(arbrt::RuntimeOptions* options) {
    const int cores = options->numCores ? options->numCores : int(sysconf(_SC_NPROCESSORS_ONLN));
    const std::string& path = config().arbiterSocket;
    std::string why;
    if (!arbiterReachable(path, &why)) {
        logWarning("cannot reach core arbiter at %s (%s); running standalone on %d cores",
                   path.c_str(), why.c_str(), cores);
        return;
    }
    arbclient::ClientOptions clientOptions;
    clientOptions.startThread = startKernelThread;
    auto client = arbclient::CoreArbiterClient::connect(path, clientOptions, &why);
    if (!client) {
        logWarning("cannot register with core arbiter at %s (%s); running standalone on %d cores",
                   path.c_str(), why.c_str(), cores);
        return;
    }
    gArbiter = client.release();
    options->numCores = cores;
    options->coreProvider = gArbiter;
    options->priority = config().priority;
    options->minCores = config().minCores;
    options->estimator = makeEstimator(
        config().estimator, std::min<uint32_t>(config().minCores, cores), uint32_t(cores));
    logVerbose("cores from core arbiter at %s: up to %d at priority %d, %s estimator", path.c_str(),
               cores, config().priority,
               std::string(arbconfig::estimatorName(config().estimator.kind)).c_str());
}

void printStats() {
    const arbrt::RuntimeStats s = arbrt::stats();
    std::fprintf(stderr,
                 "arbrun: stats: threads created %llu, peak live threads %llu, context switches "
                 "%llu, parks resumed in place %llu, steals %llu, blocking calls handed off %llu, "
                 "preemptions %llu, raw system calls trapped %llu, calls retaken %llu, readiness "
                 "seen by the netpoller %llu, by polling carriers %llu, by the monitor %llu, cores "
                 "reserved %llu, exclusive fallbacks %llu, releases awaiting a park %llu (then "
                 "preempted %llu), cohorts formed %llu (mean size %.2f), cores %d\n",
                 (unsigned long long)s.threadsCreated, (unsigned long long)s.peakLiveThreads,
                 (unsigned long long)s.contextSwitches, (unsigned long long)s.resumedInPlace,
                 (unsigned long long)s.steals, (unsigned long long)s.coresLent,
                 (unsigned long long)s.preemptions, (unsigned long long)s.trappedSyscalls,
                 (unsigned long long)s.retakes, (unsigned long long)s.readyByNetpoller,
                 (unsigned long long)s.readyByPollingCarrier, (unsigned long long)s.readyByMonitor,
                 (unsigned long long)s.coresReserved, (unsigned long long)s.exclusiveFallbacks,
                 (unsigned long long)s.releasesAwaitingPark,
                 (unsigned long long)s.releasesPreemptedAfterWaiting,
                 (unsigned long long)s.cohortsFormed,
                 s.cohortsFormed ? double(s.cohortThreads) / double(s.cohortsFormed) : 0.0,
                 arbrt::numCores());
}

// Says (verbosely) whether system calls the program issues outside libc are caught, and if not
// why: they then block their carrier until the monitor lends the core (`arbrun doctor` says so
// too). The "why" probes syscall user dispatch on a thread, so only when it will be printed and
// was asked for: a process that traps system calls itself (valgrind, which runs its own system
// calls from outside libc) is killed by the probe's SIGSYS, even under --native-syscalls.
void reportRawSyscallCatching() {
    std::string why;
    if (arbrt::syscallDispatchActive()) {
        logVerbose("%s (syscall user dispatch)", arbconfig::report::kSyscallsCaught);
    } else if (config().verbose && !config().nativeSyscalls &&
               !arbrt::syscallDispatchAvailable(&why)) {
        logVerbose("%s%s", arbconfig::report::kSyscallsNotCaught, why.c_str());
    }
}

// Says (verbosely) which glibc the program loaded and whether the runtime's thread-layout probe
// takes it, before start() asks the same probe. `arbrun doctor` reads the line from its trial run:
// the launcher is linked statically, so only a program with the system's libc.so can tell.
void reportGlibc() {
    if (!config().verbose) return;
    std::string why;
    const std::string version = arbrt::glibcVersion();
    if (arbrt::glibcLayoutSupported(&why)) {
        logVerbose("%s%s%s", arbconfig::report::kGlibc, version.c_str(),
                   arbconfig::report::kLayoutAccepted);
    } else {
        logVerbose("%s%s%s%s", arbconfig::report::kGlibc, version.c_str(),
                   arbconfig::report::kLayoutRejected, why.c_str());
    }
}

Mode decideMode() {
    // The runtime's clock calibration spans the checks and set-up below instead of a sleep.
    arbrt::beginClockCalibration();
    noteStdioBeforeThreads();  // before any kernel thread of ours exists
    std::string error;
    // Before anything is installed (signal handlers, the runtime's threads): such a process
    // must see glibc exactly as without arbrun.
    if (ownThreadRuntime(&error)) {
        logWarning("%s; running it natively", error.c_str());
        return Mode::native;
    }
    if (!arbconfig::fromEnvironment([](const char* name) { return getenv(name); }, &config(),
                                    &error)) {
        logWarning("%s; running natively", error.c_str());
        return Mode::native;
    }
    reportGlibc();
    arbrt::RuntimeOptions options;
    options.numCores = int(config().maxCores);
    options.tracePath = config().tracePath;
    options.idleSpinNs = uint64_t(config().idleSpinUs) * 1000;
    options.dispatch = config().dispatch == arbconfig::Dispatch::cohort ? arbrt::Dispatch::cohort
                                                                        : arbrt::Dispatch::fifo;
    options.cohortMaxThreads = config().cohortMax;
    options.cohortMaxNs = uint64_t(config().cohortMaxUs) * 1000;
    if (config().timeSliceUs != 0) {
        options.preemptSignal = installCarrierSignalHandler();
        options.timeSliceNs = uint64_t(config().timeSliceUs) * 1000;
        options.releaseDeferNs = uint64_t(config().releaseDeferUs) * 1000;
        options.retakeAfterNs = uint64_t(config().retakeAfterUs) * 1000;
    }
    if (!config().nativeSyscalls) {
        options.rawSyscallHandler = handleRawSyscall;
        catchTrappedSyscalls();
    }
    options.coreZeroAwaitsCaller = true;  // mainTrampoline() runs core 0 (standalone)
    arbrt::setHostThreadApi({createKernelThread, ARBRUN_REAL(pthread_join)});
    // On the initial thread, before any user thread: main() will allocate from the main arena.
    gMainArena = arbrt::findMainArena();
    if (!config().standalone) connectArbiter(&options);
    if (options.coreProvider) {
        if (auto err = arbrt::start(options)) {
            // The arbiter is there but did not take our request: standalone rather than nothing.
            logWarning("%s; running standalone on %d cores", err->message.c_str(),
                       options.numCores);
            delete gArbiter;
            gArbiter = nullptr;
            options.coreProvider = nullptr;
        } else {
            if (config().stats) std::atexit(printStats);
            logVerbose("%s with up to %d cores from the core arbiter",
                       arbconfig::report::kRuntimeStarted, options.numCores);
            reportRawSyscallCatching();
            return Mode::runtime;
        }
    }
    if (auto err = arbrt::start(options)) {
        logWarning("cannot start the user-thread runtime (%s); running natively",
                   err->message.c_str());
        return Mode::native;
    }
    if (config().stats) std::atexit(printStats);
    logVerbose("%s with %d cores", arbconfig::report::kRuntimeStarted, arbrt::numCores());
    reportRawSyscallCatching();
    return Mode::runtime;
}

// main() as a user thread: its return value goes to exit() on that thread, as in a native program.
int (*gMain)(int, char**, char**) = nullptr;
struct MainArgs {
    int argc;
    char** argv;
    char** envp;
};

void* runMain(void* raw) {
    auto* a = static_cast<MainArgs*>(raw);
    if (gMainArena && !arbrt::useMainArena()) {
        logVerbose("main() allocates from an arena of its own (glibc's main arena was refused)");
    }
    std::exit(gMain(a->argc, a->argv, a->envp));
}

size_t mainStackSize() {
    rlimit rl{};
    constexpr size_t kDefault = 8u << 20, kMax = size_t(1) << 30;
    if (getrlimit(RLIMIT_STACK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return kDefault;
    return rl.rlim_cur < kDefault ? kDefault : (rl.rlim_cur > kMax ? kMax : size_t(rl.rlim_cur));
}

// main()'s user thread, made by createMainThread(). err stays -1 until a creation was tried.
struct MainLaunch {
    MainArgs args;
    pthread_t thread{};
    int err = -1;
};

bool createMainThread(void* raw) {
    auto* launch = static_cast<MainLaunch*>(raw);
    arbrt::ThreadAttributes attributes;
    attributes.stackSize = mainStackSize();
    attributes.threadClass = defaultRuntimeClass();  // no rule names main() (classes.h)
    launch->err = createUserThread(attributes, runMain, &launch->args, &launch->thread);
    return launch->err == 0;
}

// Standalone, this kernel thread becomes core 0's carrier and runs main() itself (no carrier
// thread to create and hand over to; RuntimeOptions::coreZeroAwaitsCaller). Where core 0 already
// has a carrier (a constructor created a thread) or in arbiter mode, it waits for main() here.
int mainTrampoline(int argc, char** argv, char** envp) {
    if (ensureStarted() != Mode::runtime) return gMain(argc, argv, envp);
    MainLaunch launch{{argc, argv, envp}};
    registerLibraryKernelThread();  // core 0's carrier, or the thread that waits for main()
    arbrt::runCallerAsCoreZero(createMainThread, &launch);  // returns only when it cannot
    if (launch.err == -1) createMainThread(&launch);
    if (launch.err != 0) {
        logWarning("cannot create the main user thread (%s); running main natively",
                   strerror(launch.err));
        unregisterLibraryKernelThread();
        return gMain(argc, argv, envp);
    }
    pthread_join(launch.thread, nullptr);  // returns only if main() called pthread_exit()
    arbrt::waitUntilNoThreads();
    std::exit(0);  // POSIX: the process exits with status 0 after its last thread
}

__attribute__((constructor(101))) void onLoad() {
    installForkHandlers();  // first of all handlers: see fork.h
    ensureStarted();
}

}  // namespace

void forEachLibraryKernelThread(void (*fn)(int tid)) {
    for (const std::atomic<int>& slot : gLibraryThreads) {
        if (const int tid = slot.load(std::memory_order_acquire)) fn(tid);
    }
}

void resetLibraryKernelThreadsAfterFork() {
    for (std::atomic<int>& slot : gLibraryThreads) slot.store(0, std::memory_order_relaxed);
    registerLibraryKernelThread();
}

bool onLibraryKernelThread() {
    const int tid = int(rawSyscall(SYS_gettid));
    for (const std::atomic<int>& slot : gLibraryThreads) {
        if (slot.load(std::memory_order_acquire) == tid) return true;
    }
    return false;
}

int createKernelThread(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                       void* arg) {
    // The new thread starts with every signal blocked and takes the creator's mask only once it
    // is known as the library's: a signal flood would otherwise find it unknown, and could keep
    // it in the signal wrapper before it ran a single instruction of its own.
    struct Start {
        void* (*start)(void*);
        void* arg;
        uint64_t mask;
    };
    auto* entry = new (std::nothrow) Start{start, arg, 0};
    if (!entry) return EAGAIN;
    // Never SIGCANCEL and SIGSETXID: glibc's set*id broadcast waits for every thread it knows to
    // take SIGSETXID, and pthread_create below may wait for a lock it holds.
    const uint64_t all = ~((uint64_t{1} << (kSigCancel - 1)) | (uint64_t{1} << (kSigSetxid - 1)));
    rawSyscall(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&all),
               reinterpret_cast<long>(&entry->mask), long(sizeof all));
    const uint64_t creatorMask = entry->mask;
    entry->mask |= heldRealtimeSignals();  // held from its first instruction (signal_queue.h)
    const int err = ARBRUN_REAL(pthread_create)(
        thread, attr,
        [](void* raw) -> void* {
            const Start s = *static_cast<Start*>(raw);
            delete static_cast<Start*>(raw);
            registerLibraryKernelThread();
            rawSyscall(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&s.mask), 0,
                       long(sizeof s.mask));
            void* result = s.start(s.arg);
            unregisterLibraryKernelThread();
            return result;
        },
        entry);
    rawSyscall(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&creatorMask), 0,
               long(sizeof creatorMask));
    if (err != 0) delete entry;
    if (err == 0) {
        installSetxidHandler();
        relaxStdioLocks();
    }
    return err;
}

int forkChildCores() {
    return gArbiter ? 1 : 0;  // 0: as many as the parent's runtime
}

bool coresFromArbiter() {
    return gArbiter != nullptr;
}

Mode ensureStarted() {
    const int mode = gMode.load(std::memory_order_acquire);
    if (mode != int(Mode::undecided)) return Mode(mode);
    bool expected = false;
    if (!gStarting.compare_exchange_strong(expected, true)) return Mode(gMode.load());
    const Mode decided = decideMode();
    gMode.store(int(decided), std::memory_order_release);
    return decided;
}

int deadlineFrom(clockid_t clock, const timespec* abstime, uint64_t* deadlineNs) {
    if (!supportedClock(clock)) return EINVAL;
    if (!abstime || abstime->tv_nsec < 0 || abstime->tv_nsec >= 1'000'000'000) return EINVAL;
    if (abstime->tv_sec < 0) {
        *deadlineNs = 0;  // long past
        return 0;
    }
    return arbrt::deadlineToNs(clock, *abstime, deadlineNs) ? 0 : EINVAL;
}

void logVerbose(const char* fmt, ...) {
    if (!config().verbose) return;
    va_list ap;
    va_start(ap, fmt);
    vlog(fmt, ap);
    va_end(ap);
}

void logWarning(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vlog(fmt, ap);
    va_end(ap);
}

void logAlways(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vlog(fmt, ap);
    va_end(ap);
}

}  // namespace arbrun

using StartMain = int (*)(int (*)(int, char**, char**), int, char**, void (*)(), void (*)(),
                          void (*)(), void*);

// glibc's entry from _start: runs the executable's constructors, then main. We hand it a main that
// runs the real one on a user thread.
ARBRUN_EXPORT int __libc_start_main(int (*main)(int, char**, char**), int argc, char** argv,
                                    void (*init)(), void (*fini)(), void (*rtldFini)(),
                                    void* stackEnd) {
    arbrun::gMain = main;
    auto real = reinterpret_cast<StartMain>(arbrun::lookupReal("__libc_start_main"));
    return real(arbrun::mainTrampoline, argc, argv, init, fini, rtldFini, stackEnd);
}
