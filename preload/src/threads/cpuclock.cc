// Per-user-thread CPU clocks. The kernel only knows the carriers' CPU time, so a user thread's
// clock comes from the runtime's accounting (arbrt::threadCpuNs: time switched in on a carrier,
// counted with one TSC read per context switch).
//
// pthread_getcpuclockid() of a user thread returns a clock id in the kernel's per-thread format
// (~pid << 3 | CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED) whose "pid" is >= 0x400000, above any real
// tid (PID_MAX_LIMIT), so it can never name a kernel thread: it encodes the thread's context slot
// and the low bits of its generation (a clock of a thread that is gone reads as EINVAL, like a
// kernel thread clock of an exited thread, unless 32 generations of the same slot went by).
// CLOCK_THREAD_CPUTIME_ID on a user thread is that thread's clock, not its carrier's.
//
// The runtime counts CPU time only from the first pthread_getcpuclockid() or CPU-clock read of a
// user thread on (arbrt::enableCpuClocks: it costs a TSC read per switch): a program that measures
// CPU time as differences, the usual use, sees native results; a thread's total CPU time before
// that first use is not counted.
//
// getrusage(RUSAGE_THREAD) on a user thread reports the same CPU time as its CPU clock, all of it
// as ru_utime (time switched in does not tell user from system time). The counts the kernel keeps
// per kernel thread (faults, context switches, block I/O, signals) read 0: the carrier's would
// count every user thread that ran there. ru_maxrss is the kernel's (the process's, as natively).
//
// clock_gettime is hot in many programs: ordinary clocks (ids >= 0 other than
// CLOCK_THREAD_CPUTIME_ID) cost one comparison before the call to libc, and a look for signals to
// take after it (a few loads when there are none).
#include <errno.h>
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>

#include <atomic>
#include <cstdint>

#include "arbrt/arbrt.h"
#include "arbrt/embed/threads.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "signals/interrupt.h"

namespace arbrun {
namespace {

constexpr uint32_t kFirstFakePid = 0x400000;       // above PID_MAX_LIMIT
constexpr uint32_t kPidLimit = uint32_t{1} << 28;  // ~pid << 3 must fit a clockid_t
constexpr uint32_t kGenerationBits = 5;
constexpr clockid_t kPerThreadSched = 6;  // CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_SCHED

using ClockGettime = int (*)(clockid_t, timespec*);

// libc's clock_gettime, resolved on first use; any thread may store it (same value).
std::atomic<ClockGettime> gRealClockGettime{nullptr};

ClockGettime realClockGettime() {
    ClockGettime f = gRealClockGettime.load(std::memory_order_relaxed);
    if (__builtin_expect(!f, 0)) {
        f = reinterpret_cast<ClockGettime>(lookupReal("clock_gettime"));
        gRealClockGettime.store(f, std::memory_order_relaxed);
    }
    return f;
}

bool encode(arbrt::ThreadId thread, clockid_t* out) {
    const uint64_t v = (uint64_t{arbrt::threadSlot(thread)} << kGenerationBits) |
                       (thread.generation & ((1u << kGenerationBits) - 1));
    if (v >= kPidLimit - kFirstFakePid) return false;
    const uint32_t pid = kFirstFakePid + uint32_t(v);
    *out = clockid_t((~pid << 3) | uint32_t(kPerThreadSched));
    return true;
}

// The user thread a clock id names: *isOurs false for any other clock id; a null handle when it
// is ours but its thread is gone.
arbrt::ThreadId decode(clockid_t clock, bool* isOurs) {
    *isOurs = false;
    if (clock >= 0 || (clock & 7) != kPerThreadSched) return {};
    const uint32_t pid = ~uint32_t(clock >> 3);
    if (pid < kFirstFakePid || pid >= kPidLimit) return {};
    *isOurs = true;
    const uint32_t v = pid - kFirstFakePid;
    const arbrt::ThreadId t = arbrt::threadAtSlot(v >> kGenerationBits);
    if (!t || (t.generation & ((1u << kGenerationBits) - 1)) != (v & ((1u << kGenerationBits) - 1)))
        return {};
    return t;
}

// The thread whose CPU time `clock` reads, if it is a user thread's: *handled false when the
// clock belongs to libc/the kernel.
arbrt::ThreadId cpuClockThread(clockid_t clock, bool* handled) {
    if (clock == CLOCK_THREAD_CPUTIME_ID) {
        const arbrt::ThreadId self = arbrt::self();
        *handled = bool(self);
        return self;
    }
    return decode(clock, handled);
}

void toTimespec(uint64_t ns, timespec* ts) {
    ts->tv_sec = time_t(ns / 1'000'000'000);
    ts->tv_nsec = long(ns % 1'000'000'000);
}

// The slow path of clock_gettime: CPU-time clocks only.
__attribute__((noinline)) int cpuClockGettime(clockid_t clock, timespec* ts) {
    bool handled = false;
    const arbrt::ThreadId t = cpuClockThread(clock, &handled);
    if (!handled) return realClockGettime()(clock, ts);
    if (!t) {
        errno = EINVAL;
        return -1;
    }
    toTimespec(arbrt::threadCpuNs(t), ts);
    return 0;
}

}  // namespace
}  // namespace arbrun

using namespace arbrun;

ARBRUN_EXPORT int pthread_getcpuclockid(pthread_t thread, clockid_t* clock) {
    const arbrt::ThreadId id = userThread(thread);
    if (!id) return ARBRUN_REAL(pthread_getcpuclockid)(thread, clock);
    arbrt::enableCpuClocks();
    return encode(id, clock) ? 0 : ENOENT;  // ENOENT: glibc's "no clock for this thread"
}

ARBRUN_EXPORT int clock_gettime(clockid_t clock, timespec* ts) {
    if (__builtin_expect(clock >= 0 && clock != CLOCK_THREAD_CPUTIME_ID, 1)) {
        const int r = realClockGettime()(clock, ts);
        // A signal handed to this thread while it spins on the clock runs here: the carrier's
        // interruption refuses the vDSO, where such a loop spends nearly all its time, so without
        // this look the helper's retries (every millisecond) found it in program code only after
        // tens to hundreds of milliseconds (bench/signals, WAIT=clock).
        takeSignalsAfterProgramCall(__builtin_return_address(0));
        return r;
    }
    return cpuClockGettime(clock, ts);
}

ARBRUN_EXPORT int clock_getres(clockid_t clock, timespec* res) {
    if (clock >= 0) return ARBRUN_REAL(clock_getres)(clock, res);
    bool ours = false;
    const arbrt::ThreadId t = decode(clock, &ours);
    if (!ours) return ARBRUN_REAL(clock_getres)(clock, res);
    if (!t) {
        errno = EINVAL;
        return -1;
    }
    if (res) *res = timespec{0, 1};  // what the kernel reports for CPU-time clocks
    return 0;
}

ARBRUN_EXPORT int getrusage(int who, struct rusage* usage) {
    const arbrt::ThreadId self = arbrt::self();
    if (who != RUSAGE_THREAD || !self) return ARBRUN_REAL(getrusage)(who, usage);
    // The kernel's call first: it checks `usage` (EFAULT) and gives the process-wide fields.
    if (ARBRUN_REAL(getrusage)(RUSAGE_THREAD, usage) != 0) return -1;
    const uint64_t ns = arbrt::threadCpuNs(self);
    rusage mine{};
    mine.ru_utime.tv_sec = time_t(ns / 1'000'000'000);
    mine.ru_utime.tv_usec = suseconds_t(ns % 1'000'000'000 / 1'000);
    mine.ru_maxrss = usage->ru_maxrss;
    *usage = mine;
    return 0;
}
