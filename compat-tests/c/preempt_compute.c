// preempt_compute: threads that compute without calling anything, more of them than cores, where
// each can only finish once a thread created after it has run (blackscholes/swaptions-style
// compute loops, spin-waits on plain memory). Natively the kernel's time slices let every thread
// run; a cooperative user-thread runtime would hang: it needs preemption. Also: a timed wait whose
// deadline passes while every core computes, and a thread computing while the main thread sleeps.
#include <time.h>

#include "../common/compat.h"

enum { N = 6 };
static volatile int released[N + 1];  // released[i]: thread i may finish
static volatile unsigned long work[N];

static void* chained(void* arg) {
    int me = (int)(intptr_t)arg;
    while (!released[me + 1]) work[me]++;  // no calls: only preemption lets thread me+1 run
    released[me] = 1;
    return NULL;
}

static volatile int timed_out;

static void* timed_waiter(void* arg) {
    (void)arg;
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_nsec += 20 * 1000 * 1000;
    if (deadline.tv_nsec >= 1000000000) deadline.tv_sec++, deadline.tv_nsec -= 1000000000;
    pthread_mutex_lock(&m);
    int rc = pthread_cond_timedwait(&c, &m, &deadline);
    pthread_mutex_unlock(&m);
    timed_out = rc == ETIMEDOUT;
    return NULL;
}

static void* spin_until_timed_out(void* arg) {
    (void)arg;
    while (!timed_out) work[0]++;
    return NULL;
}

int main(void) {
    compat_start("preempt_compute");
    // Chain: thread i waits for thread i+1; the last one is released by main after creating all.
    pthread_t t[N];
    for (intptr_t i = 0; i < N; i++) t[i] = compat_spawn(chained, (void*)i);
    released[N] = 1;
    for (int i = N - 1; i >= 0; i--) compat_join(t[i]);
    for (int i = 0; i < N; i++) CHECK(released[i] == 1, "thread %d not released", i);

    // A 20 ms timed wait expires while as many threads as it takes to fill every core compute.
    pthread_t waiter = compat_spawn(timed_waiter, NULL);
    pthread_t spinners[4];
    for (int i = 0; i < 4; i++) spinners[i] = compat_spawn(spin_until_timed_out, NULL);
    compat_join(waiter);
    for (int i = 0; i < 4; i++) compat_join(spinners[i]);
    CHECK(timed_out, "the timed wait did not time out");
    return compat_ok();
}
