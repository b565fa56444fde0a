// compute_tenant: a batch tenant in the style of PARSEC's swaptions/blackscholes: THREADS threads
// that compute in long loops calling nothing (a clock read every ~million steps to know when to
// stop), for SECONDS seconds. Prints "compute_tenant: N steps" (the work done) when it ends.
// Usage: compute_tenant THREADS SECONDS
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds_to_run;
static unsigned long long total_steps;
static pthread_mutex_t total_lock = PTHREAD_MUTEX_INITIALIZER;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void* compute(void* arg) {
    unsigned long long x = (unsigned long long)(size_t)arg * 2654435761u + 1, steps = 0;
    const double end = now() + seconds_to_run;
    do {
        for (int i = 0; i < 1000000; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        steps += 1000000;
    } while (now() < end);
    pthread_mutex_lock(&total_lock);
    total_steps += steps + (x & 1);
    pthread_mutex_unlock(&total_lock);
    return NULL;
}

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: compute_tenant THREADS SECONDS\n");
        return 2;
    }
    const int threads = atoi(argv[1]);
    seconds_to_run = atof(argv[2]);
    if (threads < 1 || threads > 256 || seconds_to_run <= 0) {
        fprintf(stderr, "compute_tenant: THREADS must be 1-256 and SECONDS > 0\n");
        return 2;
    }
    pthread_t t[256];
    for (int i = 0; i < threads; i++) {
        if (pthread_create(&t[i], NULL, compute, (void*)(size_t)i) != 0) return 1;
    }
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    printf("compute_tenant: %llu steps\n", total_steps);
    return 0;
}
