// pwait_mask: the waits that swap in a signal mask for their duration (ppoll, pselect,
// epoll_pwait, epoll_pwait2, through libc and as raw system calls), used for the race-free wait
// for a signal: block it, check a flag, then wait with a mask that unblocks it. SIGUSR1 has a
// handler that counts and is blocked in every thread; for each form:
// - sent before the wait (pending while blocked), it interrupts the wait at once: -1/EINTR, its
//   handler ran once, and afterwards SIGUSR1 is blocked again;
// - with a descriptor ready as well, the call reports the descriptor; the signal stays pending
//   (blocked again) and is taken afterwards;
// - a worker waiting with nothing ready is interrupted ROUNDS times by a signal sent to the
//   process or to it.
#include <poll.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>

#include "../common/compat.h"
#include "../common/compat_wait.h"
#include "../common/raw_syscall.h"

#define FORMS 8  // ppoll, pselect, epoll_pwait, epoll_pwait2; then the same as raw calls
#define ROUNDS 40

static atomic_int handled, announced, done_rounds;
static int idle_fd, ready_fd, epoll_idle, epoll_ready;
static sigset_t unblocked;  // the mask the waits use: SIGUSR1 not in it

static void on_usr1(int sig) {
    (void)sig;
    atomic_fetch_add(&handled, 1);
}

static const char* form_name(int form) {
    static const char* names[] = {"ppoll", "pselect", "epoll_pwait", "epoll_pwait2"};
    return names[form % 4];
}

// One wait of `form` on `fd` (epoll: `ep`), time-out `ms` (< 0: none). Returns what libc
// returns: the count, or -1 with errno.
static int wait_once(int form, int fd, int ep, int ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    struct timespec* t = ms < 0 ? NULL : &ts;
    struct pollfd p = {fd, POLLIN, 0};
    fd_set in;
    FD_ZERO(&in);
    FD_SET(fd, &in);
    struct epoll_event ev;
    if (form < 4) {
        switch (form) {
            case 0:
                return ppoll(&p, 1, t, &unblocked);
            case 1:
                return pselect(fd + 1, &in, NULL, NULL, t, &unblocked);
            case 2:
                return epoll_pwait(ep, &ev, 1, ms, &unblocked);
            default:
                return epoll_pwait2(ep, &ev, 1, t, &unblocked);
        }
    }
#if defined(__x86_64__)
    uint64_t kmask;
    memcpy(&kmask, &unblocked, sizeof kmask);
    long r;
    switch (form - 4) {
        case 0:
            r = raw6(SYS_ppoll, (long)&p, 1, (long)t, (long)&kmask, 8, 0);
            break;
        case 1: {
            struct {
                const uint64_t* mask;
                size_t size;
            } arg = {&kmask, 8};
            r = raw6(SYS_pselect6, fd + 1, (long)&in, 0, 0, (long)t, (long)&arg);
            break;
        }
        case 2:
            r = raw6(SYS_epoll_pwait, ep, (long)&ev, 1, ms, (long)&kmask, 8);
            break;
        default:
            r = raw6(SYS_epoll_pwait2, ep, (long)&ev, 1, (long)t, (long)&kmask, 8);
            break;
    }
    if (r < 0) {
        errno = (int)-r;
        return -1;
    }
    return (int)r;
#else
    errno = ENOSYS;
    return -1;
#endif
}

static int usr1_blocked(void) {
    sigset_t cur;
    CHECK_RC(pthread_sigmask(SIG_BLOCK, NULL, &cur), 0);
    return sigismember(&cur, SIGUSR1);
}

static void wait_pending(void) {
    const int64_t end = compat_now_ns(CLOCK_MONOTONIC) + COMPAT_LONG_MS * 1000000LL;
    for (;;) {
        sigset_t p;
        CHECK_SYS(sigpending(&p));
        if (sigismember(&p, SIGUSR1)) return;
        CHECK(compat_now_ns(CLOCK_MONOTONIC) < end, "SIGUSR1 never became pending");
        sched_yield();
    }
}

static void* waiter(void* arg) {
    const int form = (int)(intptr_t)arg;
    for (int r = 0; r < ROUNDS; r++) {
        atomic_store(&announced, r + 1);
        const int got = wait_once(form, idle_fd, epoll_idle, -1);
        CHECK(got == -1 && errno == EINTR, "%s (form %d) round %d: returned %d (%s)",
              form_name(form), form, r, got, strerror(errno));
        CHECK(usr1_blocked(), "%s: SIGUSR1 not blocked again after the wait", form_name(form));
        atomic_store(&done_rounds, r + 1);
    }
    return NULL;
}

int main(void) {
    compat_start("pwait_mask");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    CHECK_SYS(sigaction(SIGUSR1, &sa, NULL));
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    CHECK_RC(pthread_sigmask(SIG_BLOCK, &usr1, &unblocked), 0);
    sigdelset(&unblocked, SIGUSR1);
    int idle[2], ready[2];
    CHECK_SYS(pipe(idle));
    CHECK_SYS(pipe(ready));
    CHECK_EQ(write(ready[1], "x", 1), 1);
    idle_fd = idle[0];
    ready_fd = ready[0];
    epoll_idle = epoll_create1(EPOLL_CLOEXEC);
    epoll_ready = epoll_create1(EPOLL_CLOEXEC);
    CHECK_SYS(epoll_idle);
    CHECK_SYS(epoll_ready);
    struct epoll_event ev = {.events = EPOLLIN};
    ev.data.fd = idle_fd;
    CHECK_SYS(epoll_ctl(epoll_idle, EPOLL_CTL_ADD, idle_fd, &ev));
    ev.data.fd = ready_fd;
    CHECK_SYS(epoll_ctl(epoll_ready, EPOLL_CTL_ADD, ready_fd, &ev));

#if defined(__x86_64__)
    const int forms = FORMS;
#else
    const int forms = 4;  // the raw forms need the x86-64 inline syscall helper
#endif
    for (int form = 0; form < forms; form++) {
        // Pending before the wait: EINTR at once, the handler ran, blocked again.
        int before = atomic_load(&handled);
        CHECK_SYS(kill(getpid(), SIGUSR1));
        wait_pending();
        const int got = wait_once(form, idle_fd, epoll_idle, COMPAT_LONG_MS);
        CHECK(got == -1 && errno == EINTR, "%s (form %d), signal pending: returned %d (%s)",
              form_name(form), form, got, strerror(errno));
        if (atomic_load(&handled) != before + 1) {
            sigset_t p;
            sigpending(&p);
            COMPAT_FAIL("%s (form %d), signal pending: EINTR with %d handler runs (SIGUSR1 %s)",
                        form_name(form), form, atomic_load(&handled) - before,
                        sigismember(&p, SIGUSR1) ? "still pending" : "not pending");
        }
        CHECK(usr1_blocked(), "%s: SIGUSR1 not blocked again", form_name(form));

        // Pending with a descriptor ready: the descriptor is reported, the signal stays pending.
        before = atomic_load(&handled);
        CHECK_SYS(kill(getpid(), SIGUSR1));
        wait_pending();
        const int n = wait_once(form, ready_fd, epoll_ready, COMPAT_LONG_MS);
        CHECK(n == 1, "%s (form %d), descriptor ready and signal pending: returned %d (%s)",
              form_name(form), form, n, strerror(errno));
        CHECK_EQ(atomic_load(&handled), before);
        CHECK_EQ(sigwaitinfo(&usr1, NULL), SIGUSR1);  // still pending: take it

        // A waiting worker, interrupted again and again.
        atomic_store(&announced, 0);
        atomic_store(&done_rounds, 0);
        const pthread_t t = compat_spawn(waiter, (void*)(intptr_t)form);
        for (int r = 0; r < ROUNDS; r++) {
            compat_wait_at_least(&announced, r + 1, "waiter announced");
            // Until the round is over: a signal taken before the wait began runs the handler
            // outside it and leaves the wait to the next one.
            char what[64];
            snprintf(what, sizeof what, "%s round %d: the end of the wait", form_name(form), r);
            compat_signal_until(r % 2 == 0 ? 0 : t, SIGUSR1, &done_rounds, r + 1, what);
        }
        compat_join(t);
        // Signals sent after the last wait ended stay pending (blocked everywhere): take them.
        struct timespec zero = {0, 0};
        while (sigtimedwait(&usr1, NULL, &zero) == SIGUSR1) {
        }
    }
    return compat_ok();
}
