// syscall(SYS_futex, ...) emulated on the runtime's parking lot, so a waiting user thread parks
// instead of blocking its carrier (libstdc++'s atomic::wait and __cxa_guard_acquire, Rust's std and
// glib's GMutex reach the kernel through syscall()). Every caller, user thread or not, goes through
// the emulation, so waiters and wakers always meet in the same table. That includes futexes without
// FUTEX_PRIVATE_FLAG on private memory: libstdc++ 12's atomic::wait and the static-initialisation
// guard use plain FUTEX_WAIT there, and a carrier blocked in the kernel could deadlock the thread
// that would wake it.
//
// A futex without FUTEX_PRIVATE_FLAG in memory shared with other processes (inSharedMapping():
// MAP_SHARED, System V shm) is the kernel's, since the other side may be another process:
// - WAIT, WAIT_BITSET: the kernel's, bracketed as a blocking call (the core is lent to a spare
//   carrier while it waits);
// - WAKE, WAKE_BITSET: the kernel's for up to `n` waiters, then the emulation's for the rest (a
//   waiter of this process parked here, e.g. with FUTEX_WAIT_PRIVATE on that word); the counts add
//   up, never beyond `n`;
// - REQUEUE, CMP_REQUEUE: the kernel's (which compares the value for CMP_REQUEUE), then the
//   emulation's with what is left of both counts (the kernel wakes before it requeues, so its
//   result splits into woken and requeued), without comparing again.
// glibc's own process-shared objects use inline system calls, not syscall(), and are unaffected.
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>

#include "arbrt/arbrt.h"
#include "arbrt/embed/resume_point.h"
#include "arbrt/io.h"
#include "io/io_uring.h"
#include "io/raw_syscalls.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "process/credentials.h"
#include "sync/futex.h"
#include "sync/shared_memory.h"

namespace arbrun {
namespace {

bool validTimeout(const timespec* t) {
    return t->tv_sec >= 0 && t->tv_nsec >= 0 && t->tv_nsec < 1'000'000'000;
}

const std::atomic<int>& word(const void* address) {
    return *static_cast<const std::atomic<int>*>(address);
}

long failWith(int err) {
    errno = err;
    return -1;
}

long futexWait(const int* address, int expected, uint64_t deadlineNs, uint32_t bitset) {
    const auto r = arbrt::park(
        address, [&] { return word(address).load(std::memory_order_relaxed) == expected; },
        deadlineNs, bitset);
    if (r == arbrt::ParkResult::invalid) return failWith(EAGAIN);
    if (r == arbrt::ParkResult::timedOut) return failWith(ETIMEDOUT);
    return 0;
}

// FUTEX_WAIT: relative timeout on CLOCK_MONOTONIC. FUTEX_WAIT_BITSET: absolute, on the clock the
// FUTEX_CLOCK_REALTIME flag selects.
long emulateWait(int op, bool realtime, const int* address, int expected, const timespec* timeout,
                 uint32_t bitset) {
    if (bitset == 0) return failWith(EINVAL);
    uint64_t deadline = arbrt::kNoDeadline;
    if (timeout) {
        if (!validTimeout(timeout)) return failWith(EINVAL);
        if (op == FUTEX_WAIT) {
            const uint64_t rel =
                uint64_t(timeout->tv_sec) * 1'000'000'000 + uint64_t(timeout->tv_nsec);
            deadline = arbrt::nowNs() + rel;
        } else if (!arbrt::deadlineToNs(realtime ? CLOCK_REALTIME : CLOCK_MONOTONIC, *timeout,
                                        &deadline)) {
            return failWith(EINVAL);
        }
    }
    return futexWait(address, expected, deadline, bitset);
}

long emulateRequeue(bool compare, const int* from, int wakeCount, long requeueCount, const int* to,
                    int expected) {
    if (wakeCount < 0 || requeueCount < 0) return failWith(EINVAL);
    const long n = arbrt::requeue(from, to, size_t(wakeCount), size_t(requeueCount), [&] {
        return !compare || word(from).load(std::memory_order_relaxed) == expected;
    });
    return n < 0 ? failWith(EAGAIN) : n;
}

// The kernel's futex with the caller's arguments (errno set on failure, on the caller's TCB).
long kernelFutex(const long a[6]) {
    return ARBRUN_REAL(syscall)(SYS_futex, a[0], a[1], a[2], a[3], a[4], a[5]);
}

// WAKE/WAKE_BITSET on shared memory: the kernel's waiters first, then this process's parked ones,
// `n` in all.
long sharedWake(int cmd, const long a[6]) {
    const long woken = kernelFutex(a);
    const int n = int(a[2]);
    if (woken < 0 || woken >= n) return woken;
    const uint32_t bitset = cmd == FUTEX_WAKE_BITSET ? uint32_t(a[5]) : ~0u;
    return woken +
           long(arbrt::unpark(reinterpret_cast<const int*>(a[0]), size_t(n - woken), bitset));
}

// REQUEUE/CMP_REQUEUE on shared memory: the kernel's, then the emulation's with the remaining
// counts (the kernel compared the value already; a second comparison could fail after it moved
// waiters).
long sharedRequeue(const long a[6]) {
    const long moved = kernelFutex(a);
    const long wake = int(a[2]), requeue = int(a[3]);  // val, and val2 in the timeout slot
    if (moved < 0 || wake < 0 || requeue < 0) return moved;
    const long wokenThere = std::min(wake, moved);
    const long wakeLeft = wake - wokenThere;
    const long requeueLeft = std::max(0L, requeue - (moved - wokenThere));
    if (wakeLeft == 0 && requeueLeft == 0) return moved;
    const long here =
        arbrt::requeue(reinterpret_cast<const int*>(a[0]), reinterpret_cast<const int*>(a[4]),
                       size_t(wakeLeft), size_t(requeueLeft), [] { return true; });
    return moved + std::max(0L, here);
}

// A non-private futex operation on shared memory (see the top of the file). Returns true (and
// *result) if handled; false for operations the kernel takes anyway (WAKE_OP, PI futexes, ...).
bool sharedFutex(int cmd, const long a[6], long* result) {
    switch (cmd) {
        case FUTEX_WAIT:
        case FUTEX_WAIT_BITSET: {
            arbrt::BlockingCall blocking;  // nothing to do on a kernel thread
            *result = kernelFutex(a);
            return true;
        }
        case FUTEX_WAKE:
        case FUTEX_WAKE_BITSET:
            *result = sharedWake(cmd, a);
            return true;
        case FUTEX_REQUEUE:
        case FUTEX_CMP_REQUEUE:
            *result = sharedRequeue(a);
            return true;
        default:
            return false;
    }
}

}  // namespace

bool emulateFutex(long a[6], long* result) {
    const int op = int(a[1]);
    if (ensureStarted() != Mode::runtime) return false;
    if (!(op & FUTEX_PRIVATE_FLAG) && inSharedMapping(reinterpret_cast<const void*>(a[0]))) {
        return sharedFutex(op & FUTEX_CMD_MASK, a, result);
    }
    const bool realtime = op & FUTEX_CLOCK_REALTIME;
    const int cmd = op & FUTEX_CMD_MASK;
    const auto* address = reinterpret_cast<const int*>(a[0]);
    const auto* timeout = reinterpret_cast<const timespec*>(a[3]);
    switch (cmd) {
        case FUTEX_WAIT:
            *result = emulateWait(FUTEX_WAIT, false, address, int(a[2]), timeout, ~0u);
            return true;
        case FUTEX_WAIT_BITSET:
            *result = emulateWait(FUTEX_WAIT_BITSET, realtime, address, int(a[2]), timeout,
                                  uint32_t(a[5]));
            return true;
        case FUTEX_WAKE:
            *result = a[2] < 0 ? failWith(EINVAL) : long(arbrt::unpark(address, size_t(a[2])));
            return true;
        case FUTEX_WAKE_BITSET:
            if (uint32_t(a[5]) == 0) {
                *result = failWith(EINVAL);
            } else {
                *result = a[2] < 0 ? failWith(EINVAL)
                                   : long(arbrt::unpark(address, size_t(a[2]), uint32_t(a[5])));
            }
            return true;
        case FUTEX_REQUEUE:
        case FUTEX_CMP_REQUEUE:
            // The fourth argument is the requeue count (val2), passed in the timeout slot.
            *result = emulateRequeue(cmd == FUTEX_CMP_REQUEUE, address, int(a[2]), a[3],
                                     reinterpret_cast<const int*>(a[4]), int(a[5]));
            return true;
        default:
            return false;  // WAKE_OP, PI futexes, ...: the kernel's (they block the carrier)
    }
}

bool changesMappings(long number) {
    return number == SYS_mmap || number == SYS_munmap || number == SYS_mremap ||
           number == SYS_shmat || number == SYS_shmdt;
}

}  // namespace arbrun

// syscall(): on a user thread, the way the same call made with the `syscall` instruction goes
// (raw_syscalls.cc: futexes emulated, blocking calls through their wrappers, signal, scheduling
// and per-thread kernel state kept per user thread, anything else bracketed as a blocking call),
// so that the two ways a program reaches the kernel behind libc's back agree. Elsewhere (before
// the runtime runs, on the library's own kernel threads): futexes as described at the top, the
// calls that must reach every kernel thread, and libc's.
ARBRUN_EXPORT long syscall(long number, ...) {
    ARBRT_RESUME_POINT();
    va_list ap;
    va_start(ap, number);
    long a[6];
    for (long& arg : a) arg = va_arg(ap, long);
    va_end(ap);
    if (arbrun::onUserThread()) {
        const long r = arbrun::handleRawSyscall(number, a);
        if (static_cast<unsigned long>(r) > -4096UL) {  // glibc's syscall(): -errno is a failure
            errno = int(-r);
            return -1;
        }
        return r;
    }
    long result;
    if (number == SYS_futex && arbrun::emulateFutex(a, &result)) return result;
    if (arbrun::credentialCall(number, a, &result) ||  // credential state (credentials.h)
        arbrun::ioUringCall(number, a, &result)) {     // io_uring rings (io_uring.h)
        if (result >= 0) return result;
        errno = int(-result);
        return -1;
    }
    result = ARBRUN_REAL(syscall)(number, a[0], a[1], a[2], a[3], a[4], a[5]);
    if (arbrun::changesMappings(number)) arbrun::noteMappingsChanged();
    return result;
}
