// Sleeps: a user thread parks on the runtime's timers instead of blocking its carrier. They are
// cancellation points and are interrupted by signals as in glibc: a handler that runs ends the
// sleep with EINTR (regardless of SA_RESTART) and the remaining time in `rem`.
#include <errno.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#include "arbrt/arbrt.h"
#include "arbrt/embed/resume_point.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "signals/signals.h"
#include "threads/cancel.h"

namespace arbrun {
namespace {

bool validRelative(const timespec* t) {
    return t && t->tv_nsec >= 0 && t->tv_nsec < 1'000'000'000 && t->tv_sec >= 0;
}

uint64_t toNs(const timespec& t) {
    return uint64_t(t.tv_sec) * 1'000'000'000 + uint64_t(t.tv_nsec);
}

uint64_t deadlineAfter(uint64_t ns) {
    const uint64_t now = arbrt::nowNs();
    return ns > ~uint64_t{0} - 1 - now ? ~uint64_t{0} - 1 : now + ns;
}

// Sleeps until `deadlineNs`; acts on cancellation; returns false (interrupted) when a signal
// handler ran. Like arbrt::sleepUntil, an arbrt::signal() that is not ours is passed on (the
// permit is restored for the thread's next block()).
bool sleepUntil(uint64_t deadlineNs) {
    bool signalled = false;
    bool completed = true;
    for (;;) {
        if (cancelActionable()) actOnCancel();
        if (signalDeliverable()) {
            bool restartable = true;
            if (deliverPendingSignals(&restartable) > 0) {
                completed = false;
                break;
            }
        }
        if (arbrt::nowNs() >= deadlineNs) break;
        arbrt::blockUntil(deadlineNs);
        if (arbrt::nowNs() < deadlineNs) signalled = true;  // woken early
    }
    if (signalled) arbrt::signal(arbrt::self());
    return completed;
}

void remaining(uint64_t deadlineNs, timespec* rem) {
    if (!rem) return;
    const uint64_t now = arbrt::nowNs();
    const uint64_t left = now < deadlineNs ? deadlineNs - now : 0;
    rem->tv_sec = time_t(left / 1'000'000'000);
    rem->tv_nsec = long(left % 1'000'000'000);
}

}  // namespace
}  // namespace arbrun

using namespace arbrun;

ARBRUN_EXPORT int nanosleep(const timespec* req, timespec* rem) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(nanosleep)(req, rem);
    if (!validRelative(req)) {
        errno = EINVAL;
        return -1;
    }
    const uint64_t deadline = deadlineAfter(toNs(*req));
    if (arbrun::sleepUntil(deadline)) return 0;
    remaining(deadline, rem);
    errno = EINTR;
    return -1;
}

ARBRUN_EXPORT int clock_nanosleep(clockid_t clock, int flags, const timespec* req, timespec* rem) {
    ARBRT_RESUME_POINT();
    if (!onUserThread() || !supportedClock(clock)) {
        return ARBRUN_REAL(clock_nanosleep)(clock, flags, req, rem);
    }
    if (!req || req->tv_nsec < 0 || req->tv_nsec >= 1'000'000'000) return EINVAL;
    uint64_t deadline;
    if (flags & TIMER_ABSTIME) {
        if (deadlineFrom(clock, req, &deadline) != 0) return EINVAL;
    } else {
        if (req->tv_sec < 0) return EINVAL;
        deadline = deadlineAfter(toNs(*req));
    }
    if (arbrun::sleepUntil(deadline)) return 0;
    if (!(flags & TIMER_ABSTIME)) remaining(deadline, rem);
    return EINTR;
}

ARBRUN_EXPORT unsigned int sleep(unsigned int seconds) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(sleep)(seconds);
    const uint64_t deadline = deadlineAfter(uint64_t(seconds) * 1'000'000'000);
    if (arbrun::sleepUntil(deadline)) return 0;
    timespec left;
    remaining(deadline, &left);
    return unsigned(left.tv_sec) + (left.tv_nsec >= 500'000'000);  // rounded, as glibc does
}

ARBRUN_EXPORT int usleep(useconds_t usec) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(usleep)(usec);
    if (arbrun::sleepUntil(deadlineAfter(uint64_t(usec) * 1'000))) return 0;
    errno = EINTR;
    return -1;
}

ARBRUN_EXPORT int thrd_sleep(const timespec* duration, timespec* remainingTime) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(thrd_sleep)(duration, remainingTime);
    if (!validRelative(duration)) return -2;  // C11: negative value other than -1 on error
    const uint64_t deadline = deadlineAfter(toNs(*duration));
    if (arbrun::sleepUntil(deadline)) return 0;
    remaining(deadline, remainingTime);
    return -1;  // C11: -1 when interrupted by a signal
}
