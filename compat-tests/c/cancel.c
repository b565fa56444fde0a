// cancel: deferred cancellation at cancellation points — pthread_testcancel, pthread_cond_wait
// (the cleanup handler runs with the mutex re-acquired), nanosleep, read on an empty pipe,
// sem_wait, pthread_join and pause-like sigsuspend; the joiner gets PTHREAD_CANCELED; cleanup
// handlers run in LIFO order; cancelling a finished-but-unjoined thread is 0; pthread_cancel
// before the thread reaches any cancellation point is acted on at the first one.
#include <semaphore.h>

#include "../common/compat.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static volatile int ready;  // set (under m) by the thread when it is about to block
static int order[8];        // cleanup handler order, written by the cancelled thread
static int norder;
static volatile int mutex_owned_in_cleanup;

static void record(void* v) {
    order[norder++] = (int)(intptr_t)v;
}

static void unlock_cleanup(void* arg) {
    // pthread_cond_wait re-acquires the mutex before acting on cancellation.
    mutex_owned_in_cleanup = pthread_mutex_trylock((pthread_mutex_t*)arg) == EBUSY;
    pthread_mutex_unlock((pthread_mutex_t*)arg);
}

static void* in_cond_wait(void* arg) {
    (void)arg;
    pthread_mutex_lock(&m);
    pthread_cleanup_push(unlock_cleanup, &m);
    ready = 1;
    pthread_cond_broadcast(&c);
    for (;;) pthread_cond_wait(&c, &m);
    pthread_cleanup_pop(0);
    return NULL;
}

// Waits until the thread announced it is about to block (it may not have blocked yet: deferred
// cancellation is acted on at the next cancellation point either way).
static void wait_ready(void) {
    pthread_mutex_lock(&m);
    while (!ready) pthread_cond_wait(&c, &m);
    ready = 0;
    pthread_mutex_unlock(&m);
}

static void announce(void) {
    pthread_mutex_lock(&m);
    ready = 1;
    pthread_cond_broadcast(&c);
    pthread_mutex_unlock(&m);
}

static void* in_testcancel(void* arg) {
    (void)arg;
    pthread_cleanup_push(record, (void*)1);
    pthread_cleanup_push(record, (void*)2);
    pthread_cleanup_push(record, (void*)3);
    announce();
    for (;;) pthread_testcancel();
    pthread_cleanup_pop(0);
    pthread_cleanup_pop(0);
    pthread_cleanup_pop(0);
    return NULL;
}

static void* in_nanosleep(void* arg) {
    (void)arg;
    announce();
    for (;;) {
        struct timespec ts = {10, 0};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static int pipefd[2];
static void* in_read(void* arg) {
    (void)arg;
    announce();
    char ch;
    for (;;) (void)!read(pipefd[0], &ch, 1);
    return NULL;
}

static sem_t sem;
static void* in_sem_wait(void* arg) {
    (void)arg;
    announce();
    for (;;) sem_wait(&sem);
    return NULL;
}

static pthread_t forever_thread;
static void* forever(void* arg) {
    (void)arg;
    for (;;) pause();
    return NULL;
}
static void* in_join(void* arg) {
    (void)arg;
    announce();
    pthread_join(forever_thread, NULL);
    return NULL;
}

static void* in_sigsuspend(void* arg) {
    (void)arg;
    announce();
    sigset_t none;
    sigemptyset(&none);
    for (;;) sigsuspend(&none);
    return NULL;
}

static void* quick(void* arg) {
    return arg;
}

// Cancelled before it starts; the first cancellation point (usleep) acts on it.
static volatile int after_first_point;
static void* late_starter(void* arg) {
    pthread_barrier_t* b = (pthread_barrier_t*)arg;
    pthread_barrier_wait(b);  // not a cancellation point
    usleep(1000);
    after_first_point = 1;
    return NULL;
}

static void cancel_and_check(void* (*fn)(void*), const char* what) {
    pthread_t t = compat_spawn(fn, NULL);
    wait_ready();
    CHECK_RC(pthread_cancel(t), 0);
    void* ret = NULL;
    CHECK_RC(pthread_join(t, &ret), 0);
    CHECK(ret == PTHREAD_CANCELED, "%s: join result %p, expected PTHREAD_CANCELED", what, ret);
}

int main(void) {
    compat_start("cancel");
    CHECK_SYS(pipe(pipefd));
    CHECK_SYS(sem_init(&sem, 0, 0));

    cancel_and_check(in_cond_wait, "cond_wait");
    CHECK(mutex_owned_in_cleanup, "mutex not re-acquired when cond_wait was cancelled");
    CHECK_RC(pthread_mutex_trylock(&m), 0);  // cleanup released it
    pthread_mutex_unlock(&m);

    cancel_and_check(in_testcancel, "testcancel");
    CHECK_EQ(norder, 3);
    CHECK(order[0] == 3 && order[1] == 2 && order[2] == 1, "cleanup order %d %d %d", order[0],
          order[1], order[2]);

    cancel_and_check(in_nanosleep, "nanosleep");
    cancel_and_check(in_read, "read");
    cancel_and_check(in_sem_wait, "sem_wait");
    forever_thread = compat_spawn(forever, NULL);
    cancel_and_check(in_join, "pthread_join");
    cancel_and_check(in_sigsuspend, "sigsuspend");
    CHECK_RC(pthread_cancel(forever_thread), 0);
    CHECK(compat_join(forever_thread) == PTHREAD_CANCELED, "pause not cancelled");

    // Cancel a thread that has already finished (not yet joined): 0, and its real result stays.
    pthread_t t = compat_spawn(quick, (void*)5);
    void* ret = NULL;
    // It has very likely finished after 20 ms; either way the cancel must succeed and the join
    // must return either its own result or PTHREAD_CANCELED (it has no cancellation point).
    usleep(20000);
    int rc = pthread_cancel(t);
    CHECK(rc == 0, "pthread_cancel of a finished thread returned %d", rc);
    CHECK_RC(pthread_join(t, &ret), 0);
    CHECK(ret == (void*)5 || ret == PTHREAD_CANCELED, "unexpected result %p", ret);

    // Cancel pending before the first cancellation point.
    pthread_barrier_t b;
    CHECK_RC(pthread_barrier_init(&b, NULL, 2), 0);
    t = compat_spawn(late_starter, &b);
    CHECK_RC(pthread_cancel(t), 0);
    pthread_barrier_wait(&b);
    CHECK(compat_join(t) == PTHREAD_CANCELED, "pending cancel not acted on at usleep");
    CHECK_EQ(after_first_point, 0);
    return compat_ok();
}
