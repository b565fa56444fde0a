// signal_legacy: the BSD and System V signal calls glibc still exports, which change the same
// mask and dispositions as the POSIX ones: sigsetmask, sigblock, siggetmask; sighold, sigrelse,
// sigignore, sigset (SIG_HOLD and handlers); sigpause (XPG form: the signal unblocked for the
// wait); siginterrupt (SA_RESTART of the disposition and of later signal() calls); sysv_signal
// (one-shot handler, signal not blocked while it runs).
#include <stdatomic.h>

#include "../common/compat.h"

// These interfaces are deprecated (the point of the test is that old programs still use them).
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

// glibc's sigmask(), whose macro warns on every use.
#define BSD_MASK(sig) (1 << ((sig)-1))

static atomic_int usr1_runs, usr2_runs;
static atomic_int usr2_blocked_inside = -1;

static void on_usr1(int sig) {
    (void)sig;
    atomic_fetch_add(&usr1_runs, 1);
}

static void on_usr2(int sig) {
    (void)sig;
    sigset_t cur;
    sigprocmask(SIG_BLOCK, NULL, &cur);
    atomic_store(&usr2_blocked_inside, sigismember(&cur, SIGUSR2));
    atomic_fetch_add(&usr2_runs, 1);
}

static int blocked(int sig) {
    sigset_t cur;
    CHECK_SYS(sigprocmask(SIG_BLOCK, NULL, &cur));
    return sigismember(&cur, sig);
}

static struct sigaction disposition(int sig) {
    struct sigaction sa;
    CHECK_SYS(sigaction(sig, NULL, &sa));
    return sa;
}

int main(void) {
    compat_start("signal_legacy");
    const int m1 = BSD_MASK(SIGUSR1), m2 = BSD_MASK(SIGUSR2);

    // BSD masks.
    CHECK_EQ(sigsetmask(m1), 0);
    CHECK(blocked(SIGUSR1) && !blocked(SIGUSR2), "sigsetmask did not block SIGUSR1 alone");
    CHECK_EQ(siggetmask(), m1);
    CHECK_EQ(sigblock(m2), m1);
    CHECK(blocked(SIGUSR2), "sigblock did not block SIGUSR2");
    CHECK_EQ(sigsetmask(0), m1 | m2);
    CHECK(!blocked(SIGUSR1) && !blocked(SIGUSR2), "sigsetmask(0) left something blocked");

    // System V: sighold, sigrelse, sigignore.
    CHECK_SYS(sighold(SIGUSR1));
    CHECK(blocked(SIGUSR1), "sighold did not block");
    CHECK_SYS(sigrelse(SIGUSR1));
    CHECK(!blocked(SIGUSR1), "sigrelse did not unblock");
    CHECK_ERRNO(sighold(0), EINVAL);
    CHECK_SYS(sigignore(SIGUSR2));
    CHECK(disposition(SIGUSR2).sa_handler == SIG_IGN, "sigignore did not ignore");
    CHECK_SYS(raise(SIGUSR2));  // ignored: nothing happens

    // sigset: a handler (unblocks), SIG_HOLD (blocks, keeps the handler).
    CHECK(sigset(SIGUSR1, on_usr1) == SIG_DFL, "sigset did not return the old disposition");
    CHECK_SYS(raise(SIGUSR1));
    CHECK_EQ(atomic_load(&usr1_runs), 1);
    CHECK(sigset(SIGUSR1, SIG_HOLD) == on_usr1, "sigset(SIG_HOLD) did not return the handler");
    CHECK(blocked(SIGUSR1), "sigset(SIG_HOLD) did not block");
    CHECK(disposition(SIGUSR1).sa_handler == on_usr1, "sigset(SIG_HOLD) changed the handler");
    CHECK(sigset(SIGUSR1, SIG_HOLD) == SIG_HOLD, "sigset of a held signal did not say SIG_HOLD");

    // sigpause (XPG): SIGUSR1 pending and held; the wait unblocks it, the handler runs, EINTR, and
    // it is held again afterwards.
    CHECK_SYS(raise(SIGUSR1));
    CHECK_EQ(atomic_load(&usr1_runs), 1);
    CHECK_ERRNO(sigpause(SIGUSR1), EINTR);
    CHECK_EQ(atomic_load(&usr1_runs), 2);
    CHECK(blocked(SIGUSR1), "sigpause left SIGUSR1 unblocked");
    CHECK_SYS(sigrelse(SIGUSR1));

    // siginterrupt: the disposition's SA_RESTART now, and signal()'s later.
    CHECK_SYS(siginterrupt(SIGUSR1, 1));
    CHECK(!(disposition(SIGUSR1).sa_flags & SA_RESTART), "siginterrupt(1) kept SA_RESTART");
    CHECK(signal(SIGUSR1, on_usr1) != SIG_ERR, "signal");
    CHECK(!(disposition(SIGUSR1).sa_flags & SA_RESTART), "signal() after siginterrupt(1) restarts");
    CHECK_SYS(siginterrupt(SIGUSR1, 0));
    CHECK(disposition(SIGUSR1).sa_flags & SA_RESTART, "siginterrupt(0) did not set SA_RESTART");
    CHECK(signal(SIGUSR1, on_usr1) != SIG_ERR, "signal");
    CHECK(disposition(SIGUSR1).sa_flags & SA_RESTART, "signal() after siginterrupt(0) does not");

    // sysv_signal: once, not blocked while it runs, then SIG_DFL.
    CHECK(sysv_signal(SIGUSR2, on_usr2) == SIG_IGN, "sysv_signal did not return SIG_IGN");
    CHECK_SYS(raise(SIGUSR2));
    CHECK_EQ(atomic_load(&usr2_runs), 1);
    CHECK_EQ(atomic_load(&usr2_blocked_inside), 0);
    CHECK(disposition(SIGUSR2).sa_handler == SIG_DFL, "sysv_signal's handler was not reset");
    return compat_ok();
}
