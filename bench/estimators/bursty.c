// bursty: an open-loop server workload for comparing core estimators. A generator thread issues
// requests at Poisson arrival times whose rate alternates between LOW and HIGH requests/s every
// PERIOD_MS (bursts); WORKERS threads take requests from a condvar queue and compute for
// SERVICE_US microseconds each (no calls inside). Latency = completion time - scheduled arrival
// (open loop: a late generator does not hide queueing). Prints one line:
//   bursty: requests N p50_us X p99_us Y p999_us Z
// Usage: bursty LOW HIGH PERIOD_MS SERVICE_US WORKERS SECONDS [SEED]
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { kMaxQueue = 1 << 16 };

static double low_rate, high_rate, service_us;
static long period_ms;
static int workers;
static double seconds_total;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t nonempty = PTHREAD_COND_INITIALIZER;
static uint64_t queue[kMaxQueue];  // scheduled arrival times (ns), guarded by lock
static size_t head, tail;
static int done;
static uint64_t* latencies;  // ns, one per completed request, guarded by lock
static size_t completed, capacity;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t work_sink;  // every request's result ends here

// Fixed work calibrated once: iterations of xorshift per microsecond on this machine.
static double iterations_per_us;
static uint64_t spin(uint64_t iterations, uint64_t x) {
    for (uint64_t i = 0; i < iterations; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    return x;
}

static void calibrate(void) {
    uint64_t iters = 1 << 20, t0 = now_ns();
    volatile uint64_t sink = spin(iters, 88172645463325252ull);
    (void)sink;
    iterations_per_us = (double)iters / ((double)(now_ns() - t0) / 1000.0);
}

static void* worker(void* arg) {
    uint64_t x = (uint64_t)(uintptr_t)arg * 2654435761u + 1;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (head == tail && !done) pthread_cond_wait(&nonempty, &lock);
        if (head == tail && done) {
            pthread_mutex_unlock(&lock);
            return NULL;
        }
        const uint64_t arrival = queue[head++ % kMaxQueue];
        pthread_mutex_unlock(&lock);
        x = spin((uint64_t)(service_us * iterations_per_us), x);
        work_sink ^= x;  // keeps the work: unused, the compiler removed the whole spin
        const uint64_t latency = now_ns() - arrival;
        pthread_mutex_lock(&lock);
        if (completed < capacity) latencies[completed++] = latency;
        pthread_mutex_unlock(&lock);
    }
}

static int compare(const void* a, const void* b) {
    const uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
    return x < y ? -1 : x > y;
}

static double quantile_us(double q) {
    if (completed == 0) return 0;
    size_t rank = (size_t)ceil(q * (double)completed);
    if (rank == 0) rank = 1;
    return (double)latencies[rank - 1] / 1000.0;
}

int main(int argc, char** argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: bursty LOW HIGH PERIOD_MS SERVICE_US WORKERS SECONDS [SEED]\n");
        return 2;
    }
    low_rate = atof(argv[1]);
    high_rate = atof(argv[2]);
    period_ms = atol(argv[3]);
    service_us = atof(argv[4]);
    workers = atoi(argv[5]);
    seconds_total = atof(argv[6]);
    unsigned seed = argc > 7 ? (unsigned)atoi(argv[7]) : 1;
    if (low_rate <= 0 || high_rate <= 0 || period_ms <= 0 || service_us <= 0 || workers < 1 ||
        workers > 256 || seconds_total <= 0) {
        fprintf(stderr, "bursty: every argument must be positive (WORKERS 1-256)\n");
        return 2;
    }
    calibrate();
    capacity = (size_t)(high_rate * seconds_total * 1.2) + 1024;
    latencies = malloc(capacity * sizeof *latencies);
    if (!latencies) return 1;
    pthread_t t[256];
    for (int i = 0; i < workers; i++) pthread_create(&t[i], NULL, worker, (void*)(uintptr_t)i);
    const uint64_t start = now_ns(), end = start + (uint64_t)(seconds_total * 1e9);
    uint64_t next = start;
    size_t issued = 0, dropped = 0;
    while (next < end) {
        const uint64_t phase = (next - start) / ((uint64_t)period_ms * 1000000u);
        const double rate = phase % 2 ? high_rate : low_rate;
        next +=
            (uint64_t)(-log(1.0 - (double)rand_r(&seed) / ((double)RAND_MAX + 1.0)) / rate * 1e9);
        struct timespec ts = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
        }
        pthread_mutex_lock(&lock);
        if (tail - head < kMaxQueue) {
            queue[tail++ % kMaxQueue] = next;
            issued++;
        } else {
            dropped++;
        }
        pthread_cond_signal(&nonempty);
        pthread_mutex_unlock(&lock);
    }
    pthread_mutex_lock(&lock);
    done = 1;
    pthread_cond_broadcast(&nonempty);
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < workers; i++) pthread_join(t[i], NULL);
    qsort(latencies, completed, sizeof *latencies, compare);
    printf("bursty: requests %zu dropped %zu p50_us %.1f p99_us %.1f p999_us %.1f\n", completed,
           dropped, quantile_us(0.5), quantile_us(0.99), quantile_us(0.999));
    return issued == completed ? 0 : 1;
}
