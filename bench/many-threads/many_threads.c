// Creates N threads that stay alive (each blocks on one condition variable until all exist),
// then lets them all exit and joins them. Prints, on one line:
//   threads=N create_us=<wall us per pthread_create> create_cpu_us=<process CPU us per create>
//   rss_kib_per_thread=<(VmRSS with N idle threads - VmRSS before) / N> rounds=R
// The creation is timed over the whole loop of N creates (threads beyond any pool, since all N
// are alive at the end); the process CPU time includes every thread's (the children's start-up
// too). With rounds R > 1 the create-block-exit-join cycle runs R times; timings and RSS are
// from the last round (later rounds may reuse what the first left behind). Exit status 0 when
// every thread ran and was joined.
//
// Usage: many_threads [N] [ROUNDS] [STACK_KIB]   (defaults 10000 1 0; STACK_KIB 0: default stack)
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go = PTHREAD_COND_INITIALIZER;
static pthread_cond_t arrived = PTHREAD_COND_INITIALIZER;
static int released;
static long started;

// Each child: says it has started, waits until main releases everyone.
static void* child(void* arg) {
    (void)arg;
    pthread_mutex_lock(&lock);
    if (++started % 256 == 0) pthread_cond_signal(&arrived);
    while (!released) pthread_cond_wait(&go, &lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

static double nowUs(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

// Resident set size in KiB (VmRSS of /proc/self/status), -1 when unreadable.
static long vmRssKib(void) {
    FILE* f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kib = strtol(line + 6, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kib;
}

int main(int argc, char** argv) {
    const long n = argc > 1 ? atol(argv[1]) : 10000;
    const int rounds = argc > 2 ? atoi(argv[2]) : 1;
    const long stackKib = argc > 3 ? atol(argv[3]) : 0;
    pthread_t* ids = calloc((size_t)n, sizeof *ids);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (stackKib > 0) pthread_attr_setstacksize(&attr, (size_t)stackKib * 1024);
    double wallUs = 0, cpuUs = 0;
    long rssBefore = 0, rssIdle = 0;
    for (int r = 0; r < rounds; ++r) {
        released = 0;
        started = 0;
        rssBefore = vmRssKib();
        const double w0 = nowUs(CLOCK_MONOTONIC), c0 = nowUs(CLOCK_PROCESS_CPUTIME_ID);
        for (long i = 0; i < n; ++i) {
            int err = pthread_create(&ids[i], &attr, child, NULL);
            if (err) {
                fprintf(stderr, "many_threads: pthread_create #%ld: %s\n", i, strerror(err));
                return 1;
            }
        }
        wallUs = nowUs(CLOCK_MONOTONIC) - w0;
        cpuUs = nowUs(CLOCK_PROCESS_CPUTIME_ID) - c0;
        pthread_mutex_lock(&lock);
        while (started < n) {
            // Children signal every 256th arrival; the last partial batch is polled with a timeout.
            struct timespec t;
            clock_gettime(CLOCK_REALTIME, &t);
            t.tv_nsec += 1000000;
            if (t.tv_nsec >= 1000000000) t.tv_sec += 1, t.tv_nsec -= 1000000000;
            pthread_cond_timedwait(&arrived, &lock, &t);
        }
        pthread_mutex_unlock(&lock);
        rssIdle = vmRssKib();
        pthread_mutex_lock(&lock);
        released = 1;
        pthread_cond_broadcast(&go);
        pthread_mutex_unlock(&lock);
        for (long i = 0; i < n; ++i) {
            if (pthread_join(ids[i], NULL) != 0) return 1;
        }
    }
    printf("threads=%ld create_us=%.3f create_cpu_us=%.3f rss_kib_per_thread=%.2f rounds=%d\n", n,
           wallUs / n, cpuUs / n, (double)(rssIdle - rssBefore) / n, rounds);
    free(ids);
    return 0;
}
