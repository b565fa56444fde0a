// compat_wait.h — waiting helpers for the C compatibility programs that signal threads while they
// wait (C only: <stdatomic.h>). Header-only, over libc and compat.h, like compat.h itself.
#ifndef COMPAT_TESTS_COMPAT_WAIT_H
#define COMPAT_TESTS_COMPAT_WAIT_H

#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>

#include "compat.h"

// Polls `v` until it reaches `target`, letting others run; fails the test, naming `what`, after
// COMPAT_LONG_MS. A bound on a handshake, never a sleep that orders events.
static inline void compat_wait_at_least(atomic_int* v, int target, const char* what) {
    const int64_t end = compat_now_ns(CLOCK_MONOTONIC) + COMPAT_LONG_MS * 1000000LL;
    for (unsigned i = 0; atomic_load(v) < target; i++) {
        sched_yield();
        if ((i & 1023) == 0 && compat_now_ns(CLOCK_MONOTONIC) > end)
            COMPAT_FAIL("%s: still waiting after %d ms", what, COMPAT_LONG_MS);
    }
}

// Sends `sig` to thread `t` (t == 0: to the process; sig == 0: nothing, a timer sends them) again
// and again, letting others run between sends, until `*flag` reaches `target`; fails the test,
// naming `what`, after COMPAT_LONG_MS. For a thread that must be interrupted inside a wait: a
// signal that lands before the wait began is taken outside it, so one send is not enough.
static inline void compat_signal_until(pthread_t t, int sig, atomic_int* flag, int target,
                                       const char* what) {
    const int64_t end = compat_now_ns(CLOCK_MONOTONIC) + COMPAT_LONG_MS * 1000000LL;
    while (atomic_load(flag) < target) {
        if (t) {
            CHECK_RC(pthread_kill(t, sig), 0);
        } else if (sig) {
            CHECK_SYS(kill(getpid(), sig));
        }
        for (int i = 0; i < 64 && atomic_load(flag) < target; i++) sched_yield();
        if (compat_now_ns(CLOCK_MONOTONIC) > end)
            COMPAT_FAIL("%s: still not reached after %d ms of signals", what, COMPAT_LONG_MS);
    }
}

// sem_wait that goes on after a signal handler interrupted it (handlers without SA_RESTART make
// it fail with EINTR); any other error fails the test.
static inline void compat_sem_wait_through_signals(sem_t* s) {
    while (sem_wait(s) != 0) CHECK(errno == EINTR, "sem_wait: errno %d", errno);
}

#endif
