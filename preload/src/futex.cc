// syscall(SYS_futex, ...) emulated on the runtime's parking lot, so a waiting user thread parks
// instead of blocking its carrier (libstdc++'s atomic::wait and __cxa_guard_acquire, Rust's std and
// glib's GMutex reach the kernel through syscall()). Every caller, user thread or not, goes through
// the emulation, so waiters and wakers always meet in the same table. That includes futexes without
// FUTEX_PRIVATE_FLAG: libstdc++ 12's atomic::wait and the static-initialisation guard use plain
// FUTEX_WAIT on private memory, and a carrier blocked there could deadlock the thread that would
// wake it. The price: a futex word in memory shared with another process that wakes it with the
// kernel's futex is not seen (glibc's own process-shared objects use inline system calls, not
// syscall(), and are unaffected).
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>

#include "arbrt/arbrt.h"
#include "real_libc.h"
#include "shim.h"

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
    uint64_t deadline = arbrt::detail::kNoDeadline;
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

// Returns true (and *result) if the call was a private futex operation handled here.
bool emulateFutex(long a[6], long* result) {
    const int op = int(a[1]);
    if (ensureStarted() != Mode::runtime) return false;
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

}  // namespace
}  // namespace arbrun

ARBRUN_EXPORT long syscall(long number, ...) {
    va_list ap;
    va_start(ap, number);
    long a[6];
    for (long& arg : a) arg = va_arg(ap, long);
    va_end(ap);
    long result;
    if (number == SYS_futex && arbrun::emulateFutex(a, &result)) return result;
    return ARBRUN_REAL(syscall)(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
