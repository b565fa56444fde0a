// signal_rt_compute: a real-time signal handler installed while the program already handles
// other signals, and the signal sent while the only thread computes without system calls, as a
// numeric program that takes a supervisor's SIGRTMIN+n to checkpoint does. For each of 16
// real-time signals in turn: install its handler, fork a child that sigqueue()s it once to the
// parent, and spin (reading the clock only, which makes no system call) until the handler has run
// with the child's value. Nothing else happens meanwhile that would make the process look at
// pending signals: the handler must run because the signal was sent.
#include <sys/wait.h>

#include "../common/compat.h"

enum { SIGNALS = 16 };

static volatile sig_atomic_t gValue = -1;

static void onSignal(int sig, siginfo_t* info, void* ctx) {
    (void)sig;
    (void)ctx;
    gValue = info->si_value.sival_int;
}

int main(void) {
    compat_start("signal_rt_compute");  // handles SIGALRM: signals are the program's business
    CHECK(SIGRTMIN + SIGNALS - 1 <= SIGRTMAX, "too few real-time signals");
    for (int k = 0; k < SIGNALS; ++k) {
        const int sig = SIGRTMIN + k;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = onSignal;
        sa.sa_flags = SA_SIGINFO;
        CHECK(sigaction(sig, &sa, NULL) == 0, "sigaction(SIGRTMIN+%d): errno %d", k, errno);
        gValue = -1;
        const pid_t parent = getpid();
        const pid_t child = fork();
        CHECK(child >= 0, "fork: errno %d", errno);
        if (child == 0) {
            const union sigval v = {.sival_int = 1000 + k};
            _exit(sigqueue(parent, sig, v) == 0 ? 0 : 1);
        }
        // The deadline is read from the clock (vDSO): the loop makes no system call.
        const struct timespec deadline = compat_deadline_ms(CLOCK_MONOTONIC, COMPAT_LONG_MS);
        while (gValue == -1) {
            CHECK(!compat_reached(CLOCK_MONOTONIC, &deadline),
                  "SIGRTMIN+%d, sent while computing, not handled within %d ms", k, COMPAT_LONG_MS);
        }
        CHECK(gValue == 1000 + k, "SIGRTMIN+%d: handler got value %d", k, (int)gValue);
        int status;
        CHECK(waitpid(child, &status, 0) == child, "waitpid: errno %d", errno);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's sigqueue failed");
    }
    return compat_ok();
}
