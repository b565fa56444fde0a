// Sleeps: a user thread parks on the runtime's timers instead of blocking its carrier. Signals do
// not interrupt user-thread sleeps (no EINTR), so `rem` is never written.
#include <errno.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#include "arbrt/arbrt.h"
#include "real_libc.h"
#include "shim.h"

namespace arbrun {
namespace {

bool validRelative(const timespec* t) {
    return t && t->tv_nsec >= 0 && t->tv_nsec < 1'000'000'000 && t->tv_sec >= 0;
}

uint64_t toNs(const timespec& t) {
    return uint64_t(t.tv_sec) * 1'000'000'000 + uint64_t(t.tv_nsec);
}

}  // namespace
}  // namespace arbrun

using namespace arbrun;

ARBRUN_EXPORT int nanosleep(const timespec* req, timespec* rem) {
    if (!onUserThread()) return ARBRUN_REAL(nanosleep)(req, rem);
    if (!validRelative(req)) {
        errno = EINVAL;
        return -1;
    }
    arbrt::sleepFor(toNs(*req));
    return 0;
}

ARBRUN_EXPORT int clock_nanosleep(clockid_t clock, int flags, const timespec* req, timespec* rem) {
    if (!onUserThread() || !supportedClock(clock)) {
        return ARBRUN_REAL(clock_nanosleep)(clock, flags, req, rem);
    }
    if (!req || req->tv_nsec < 0 || req->tv_nsec >= 1'000'000'000) return EINVAL;
    if (flags & TIMER_ABSTIME) {
        uint64_t deadline;
        if (deadlineFrom(clock, req, &deadline) != 0) return EINVAL;
        arbrt::sleepUntil(deadline);
    } else {
        if (req->tv_sec < 0) return EINVAL;
        arbrt::sleepFor(toNs(*req));
    }
    return 0;
}

ARBRUN_EXPORT unsigned int sleep(unsigned int seconds) {
    if (!onUserThread()) return ARBRUN_REAL(sleep)(seconds);
    arbrt::sleepFor(uint64_t(seconds) * 1'000'000'000);
    return 0;
}

ARBRUN_EXPORT int usleep(useconds_t usec) {
    if (!onUserThread()) return ARBRUN_REAL(usleep)(usec);
    arbrt::sleepFor(uint64_t(usec) * 1'000);
    return 0;
}

ARBRUN_EXPORT int thrd_sleep(const timespec* duration, timespec* remaining) {
    if (!onUserThread()) return ARBRUN_REAL(thrd_sleep)(duration, remaining);
    if (!validRelative(duration)) return -2;  // C11: negative value other than -1 on error
    arbrt::sleepFor(toNs(*duration));
    return 0;
}
