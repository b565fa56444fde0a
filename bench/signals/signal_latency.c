// Signal handler latency: a child process sends the parent a signal with sigqueue and spins until
// the parent's handler has answered in shared memory; the round trip is timed in the child. The
// child spins rather than blocks so that under arbrun (which a fork child stays under) the figure
// is the signal's path alone, not the child's own wait too. Meanwhile
// the parent's main thread waits in waitpid (WAIT=waitpid), in a pipe read that never completes
// (WAIT=read), computes (WAIT=spin) or computes reading the clock (WAIT=clock: clock_gettime in
// the loop, as a spin with a deadline does). Prints, on one line:
//   signal=<name> wait=<how> rounds=N p50_us=<median round trip> p99_us=<99th percentile>
//
// Usage: signal_latency [SIGNAL] [WAIT] [ROUNDS]   (defaults: rt waitpid 3000)
//   SIGNAL  rt (SIGRTMIN) | usr1 (SIGUSR1)
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static _Atomic int* answered;  // shared with the child: handler runs so far
static volatile sig_atomic_t stopSpinning;

static void onSignal(int sig, siginfo_t* info, void* ctx) {
    (void)sig;
    (void)ctx;
    if (info->si_value.sival_int < 0) {
        stopSpinning = 1;
        return;
    }
    atomic_fetch_add_explicit(answered, 1, memory_order_release);
}

static double nowUs(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int byValue(const void* a, const void* b) {
    const double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

int main(int argc, char** argv) {
    const char* which = argc > 1 ? argv[1] : "rt";
    const char* how = argc > 2 ? argv[2] : "waitpid";
    const int rounds = argc > 3 ? atoi(argv[3]) : 3000;
    int sig;
    if (strcmp(which, "rt") == 0) {
        sig = SIGRTMIN;
    } else if (strcmp(which, "usr1") == 0) {
        sig = SIGUSR1;
    } else {
        fprintf(stderr, "signal_latency: SIGNAL must be rt or usr1\n");
        return 2;
    }
    if (strcmp(how, "waitpid") != 0 && strcmp(how, "read") != 0 && strcmp(how, "spin") != 0 &&
        strcmp(how, "clock") != 0) {
        fprintf(stderr, "signal_latency: WAIT must be waitpid, read, spin or clock\n");
        return 2;
    }
    if (rounds < 1 || rounds > 1000000) {
        fprintf(stderr, "signal_latency: ROUNDS must be 1..1000000\n");
        return 2;
    }
    int never[2];
    if (pipe(never) != 0) {
        perror("signal_latency: pipe");
        return 1;
    }
    answered =
        mmap(NULL, sizeof *answered, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (answered == MAP_FAILED) {
        perror("signal_latency: mmap");
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = onSignal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(sig, &sa, NULL);
    const pid_t parent = getpid();
    const pid_t child = fork();
    if (child < 0) {
        perror("signal_latency: fork");
        return 1;
    }
    if (child == 0) {
        close(never[0]);
        double* us = malloc(sizeof(double) * (size_t)rounds);
        for (int i = 0; i < rounds; ++i) {
            const double t0 = nowUs();
            const union sigval v = {.sival_int = i};
            if (sigqueue(parent, sig, v) != 0) _exit(3);
            while (atomic_load_explicit(answered, memory_order_acquire) != i + 1) {
                if (nowUs() - t0 > 10e6) _exit(4);  // no answer in 10 s: the parent is gone or hung
            }
            us[i] = nowUs() - t0;
        }
        qsort(us, (size_t)rounds, sizeof *us, byValue);
        printf("signal=%s wait=%s rounds=%d p50_us=%.1f p99_us=%.1f\n", which, how, rounds,
               us[rounds / 2], us[(int)(rounds * 0.99)]);
        fflush(stdout);
        const union sigval stop = {.sival_int = -1};
        sigqueue(parent, sig, stop);  // ends the parent's spin
        close(never[1]);              // ends the parent's read
        _exit(0);
    }
    close(never[1]);
    if (strcmp(how, "read") == 0) {
        char c;
        while (read(never[0], &c, 1) != 0) {
        }
    } else if (strcmp(how, "spin") == 0) {
        while (!stopSpinning) {
        }
    } else if (strcmp(how, "clock") == 0) {
        struct timespec now;
        while (!stopSpinning) clock_gettime(CLOCK_MONOTONIC, &now);
    }
    int status;
    while (waitpid(child, &status, 0) != child) {
        if (errno != EINTR) {
            perror("signal_latency: waitpid");
            return 1;
        }
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
