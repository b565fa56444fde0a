// sigmask: pthread_sigmask is per thread — a thread's mask does not change main's, new threads
// inherit their creator's mask, a blocked signal sent with pthread_kill stays pending for that
// thread only (sigpending) and is consumed by sigwait/sigtimedwait; bad `how` is EINVAL;
// SIG_SETMASK with NULL set just reads the mask.
#include "../common/compat.h"

static pthread_barrier_t b;

// Returns 1 if `sig` is blocked in the calling thread.
static int blocked(int sig) {
    sigset_t cur;
    CHECK_RC(pthread_sigmask(SIG_BLOCK, NULL, &cur), 0);
    return sigismember(&cur, sig);
}

static void* inherit_check(void* arg) {
    return (void*)(intptr_t)blocked((int)(intptr_t)arg);
}

// Blocks SIGUSR1, receives one pthread_kill'ed SIGUSR1 through sigwait.
static void* waiter(void* arg) {
    (void)arg;
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR1);
    CHECK_RC(pthread_sigmask(SIG_BLOCK, &s, NULL), 0);
    CHECK(blocked(SIGUSR1), "SIGUSR1 not blocked after SIG_BLOCK");
    pthread_barrier_wait(&b);  // 1: main sees its own mask unchanged
    pthread_barrier_wait(&b);  // 2: main has sent SIGUSR1 to us
    sigset_t pend;
    CHECK_SYS(sigpending(&pend));
    CHECK(sigismember(&pend, SIGUSR1), "SIGUSR1 not pending in the target thread");
    int sig = 0;
    CHECK_RC(sigwait(&s, &sig), 0);
    CHECK_EQ(sig, SIGUSR1);
    CHECK_SYS(sigpending(&pend));
    CHECK(!sigismember(&pend, SIGUSR1), "SIGUSR1 still pending after sigwait");
    // A second one through sigtimedwait; then a timeout.
    CHECK_RC(pthread_kill(pthread_self(), SIGUSR1), 0);
    siginfo_t si;
    struct timespec to = {5, 0};
    CHECK_EQ(sigtimedwait(&s, &si, &to), SIGUSR1);
    CHECK_EQ(si.si_signo, SIGUSR1);
    to.tv_sec = 0;
    to.tv_nsec = 20000000;
    CHECK_ERRNO(sigtimedwait(&s, &si, &to), EAGAIN);
    pthread_barrier_wait(&b);  // 3
    return NULL;
}

static void on_usr1(int sig) {
    (void)sig;
    COMPAT_FAIL("SIGUSR1 handler ran although every thread that could get it blocks it");
}

int main(void) {
    compat_start("sigmask");
    signal(SIGUSR1, on_usr1);
    CHECK_RC(pthread_barrier_init(&b, NULL, 2), 0);
    CHECK(!blocked(SIGUSR1), "SIGUSR1 blocked at start");

    // Inheritance: block SIGUSR2 in main, create, unblock.
    sigset_t s2;
    sigemptyset(&s2);
    sigaddset(&s2, SIGUSR2);
    CHECK_RC(pthread_sigmask(SIG_BLOCK, &s2, NULL), 0);
    pthread_t t = compat_spawn(inherit_check, (void*)(intptr_t)SIGUSR2);
    CHECK_EQ((intptr_t)compat_join(t), 1);
    CHECK_RC(pthread_sigmask(SIG_UNBLOCK, &s2, NULL), 0);
    t = compat_spawn(inherit_check, (void*)(intptr_t)SIGUSR2);
    CHECK_EQ((intptr_t)compat_join(t), 0);

    // Bad `how`.
    CHECK_RC(pthread_sigmask(12345, &s2, NULL), EINVAL);
    // SIG_SETMASK round trip.
    sigset_t old, now;
    CHECK_RC(pthread_sigmask(SIG_SETMASK, &s2, &old), 0);
    CHECK_RC(pthread_sigmask(SIG_SETMASK, NULL, &now), 0);
    CHECK(sigismember(&now, SIGUSR2), "SIG_SETMASK did not take effect");
    CHECK_RC(pthread_sigmask(SIG_SETMASK, &old, NULL), 0);
    CHECK(!blocked(SIGUSR2), "mask not restored");

    // Per-thread blocking and thread-directed pending signals. Main blocks SIGUSR1 too, so the
    // handler never runs (a thread-directed signal only goes to its thread anyway).
    sigset_t s1;
    sigemptyset(&s1);
    sigaddset(&s1, SIGUSR1);
    t = compat_spawn(waiter, NULL);
    pthread_barrier_wait(&b);
    CHECK(!blocked(SIGUSR1), "main's mask changed by another thread's pthread_sigmask");
    CHECK_RC(pthread_kill(t, SIGUSR1), 0);
    sigset_t pend;
    CHECK_SYS(sigpending(&pend));
    CHECK(!sigismember(&pend, SIGUSR1), "signal for another thread pending in main");
    pthread_barrier_wait(&b);
    pthread_barrier_wait(&b);
    compat_join(t);
    return compat_ok();
}
