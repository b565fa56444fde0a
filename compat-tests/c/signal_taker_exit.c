// signal_taker_exit: process-directed signals while the threads that could take them come and go.
// Main blocks SIGUSR1 and sends it to the process (kill) 300 times, each time waiting until it was
// taken. A sigwait-er (which blocks it too) can always take it; meanwhile a spawner creates short
// threads one after another that unblock SIGUSR1 (so the kernel, or arbrun's chooser, may pick
// them), yield a few times and block it again before they exit, often while chosen and before they
// took it. Every signal must still be taken, by a handler in one of those threads or by the
// sigwait-er, within COMPAT_LONG_MS: none may stay pending for a thread that is gone.
#include <stdatomic.h>

#include "../common/compat.h"

#define SIGNALS 300

static atomic_int taken;  // by handlers and by the sigwait-er
static atomic_int by_handler, by_sigwait;
static atomic_int stop;

static void on_usr1(int sig) {
    (void)sig;
    atomic_fetch_add(&by_handler, 1);
    atomic_fetch_add(&taken, 1);
}

// Short-lived: open to SIGUSR1 for a few yields, then closed again, then gone.
static void* short_lived(void* arg) {
    (void)arg;
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    CHECK_RC(pthread_sigmask(SIG_UNBLOCK, &usr1, NULL), 0);
    for (int i = 0; i < 3; i++) sched_yield();
    CHECK_RC(pthread_sigmask(SIG_BLOCK, &usr1, NULL), 0);
    return NULL;
}

static void* spawner(void* arg) {
    (void)arg;
    while (!atomic_load(&stop)) compat_join(compat_spawn(short_lived, NULL));
    return NULL;
}

static void* sigwaiter(void* arg) {
    (void)arg;
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    for (;;) {
        int sig = 0;
        const int err = sigwait(&usr1, &sig);
        CHECK(err == 0 && sig == SIGUSR1, "sigwait returned %d (signal %d)", err, sig);
        if (atomic_load(&stop)) return NULL;
        atomic_fetch_add(&by_sigwait, 1);
        atomic_fetch_add(&taken, 1);
    }
}

int main(void) {
    compat_start("signal_taker_exit");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    CHECK_SYS(sigaction(SIGUSR1, &sa, NULL));
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    CHECK_RC(pthread_sigmask(SIG_BLOCK, &usr1, NULL), 0);  // inherited by every thread below
    const pthread_t waiter = compat_spawn(sigwaiter, NULL);
    const pthread_t churn = compat_spawn(spawner, NULL);
    for (int i = 0; i < SIGNALS; i++) {
        CHECK_SYS(kill(getpid(), SIGUSR1));
        const int64_t end = compat_now_ns(CLOCK_MONOTONIC) + COMPAT_LONG_MS * 1000000LL;
        while (atomic_load(&taken) <= i) {
            if (compat_now_ns(CLOCK_MONOTONIC) > end)
                COMPAT_FAIL("signal %d of %d not taken after %d ms (%d by handlers, %d by sigwait)",
                            i + 1, SIGNALS, COMPAT_LONG_MS, atomic_load(&by_handler),
                            atomic_load(&by_sigwait));
            sched_yield();
        }
        CHECK_EQ(atomic_load(&taken), i + 1);  // one send, one take
    }
    atomic_store(&stop, 1);
    compat_join(churn);
    CHECK_SYS(kill(getpid(), SIGUSR1));  // ends the sigwait-er (it checks `stop` first)
    compat_join(waiter);
    printf("handlers %d, sigwait %d\n", atomic_load(&by_handler), atomic_load(&by_sigwait));
    return compat_ok();
}
