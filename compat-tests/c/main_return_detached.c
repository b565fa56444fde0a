// main_return_detached: main returns 0 while detached threads are still running (sleeping in a
// loop, blocked on a condvar that is never signalled, and computing without any call). The process
// must exit at once with main's status 0, not wait for them and not crash.
#include "../common/compat.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static volatile int started;  // incremented atomically by each thread as it starts

static void* sleeper(void* arg) {
    (void)arg;
    __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
    for (;;) usleep(1000);
    return NULL;
}

static void* waiter(void* arg) {
    (void)arg;
    pthread_mutex_lock(&m);
    __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
    for (;;) pthread_cond_wait(&never, &m);
    return NULL;
}

static void* spinner(void* arg) {
    volatile unsigned long* x = (volatile unsigned long*)arg;
    __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
    for (;;) *x = *x + 1;
    return NULL;
}

static unsigned long spin_counter;

int main(void) {
    compat_start("main_return_detached");
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    // Two sleepers, two waiters and one thread that computes forever without any call.
    void* (*fns[5])(void*) = {sleeper, waiter, sleeper, waiter, spinner};
    for (int i = 0; i < 5; i++) {
        pthread_t t;
        CHECK_RC(pthread_create(&t, &a, fns[i], &spin_counter), 0);
    }
    pthread_attr_destroy(&a);
    // Wait until all have started (the spinner never yields: give it a core in turn via usleep).
    int64_t give_up = compat_now_ns(CLOCK_MONOTONIC) + COMPAT_LONG_MS * 1000000LL;
    while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < 5) {
        CHECK(compat_now_ns(CLOCK_MONOTONIC) < give_up, "threads did not start");
        usleep(1000);
    }
    return compat_ok();  // returning from main calls exit(0) with threads still running
}
