// detach: pthread_detach of a running thread; detaching twice and joining a detached thread are
// EINVAL (checked while the thread is deterministically alive); threads created detached via the
// attribute; many detached threads all run to completion (counted before main returns).
#include "../common/compat.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int release;   // guarded by m: detached threads may finish once it is set
static int finished;  // guarded by m: number of detached threads that ran to the end

// Waits for `release`, then counts itself as finished.
static void* worker(void* arg) {
    (void)arg;
    pthread_mutex_lock(&m);
    while (!release) pthread_cond_wait(&c, &m);
    finished++;
    pthread_cond_broadcast(&c);
    pthread_mutex_unlock(&m);
    return NULL;
}

// Detaches itself, then behaves like worker.
static void* self_detacher(void* arg) {
    CHECK_RC(pthread_detach(pthread_self()), 0);
    return worker(arg);
}

int main(void) {
    compat_start("detach");
    pthread_t t = compat_spawn(worker, NULL);
    CHECK_RC(pthread_detach(t), 0);
    CHECK_RC(pthread_detach(t), EINVAL);      // not joinable any more (still alive: blocked)
    CHECK_RC(pthread_join(t, NULL), EINVAL);  // joining a detached thread

    pthread_attr_t a;
    CHECK_RC(pthread_attr_init(&a), 0);
    CHECK_RC(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED), 0);
    int st = -1;
    CHECK_RC(pthread_attr_getdetachstate(&a, &st), 0);
    CHECK_EQ(st, PTHREAD_CREATE_DETACHED);
    CHECK_RC(pthread_attr_setdetachstate(&a, 12345), EINVAL);
    pthread_t t2;
    CHECK_RC(pthread_create(&t2, &a, worker, NULL), 0);
    CHECK_RC(pthread_join(t2, NULL), EINVAL);
    CHECK_RC(pthread_detach(t2), EINVAL);

    enum { MORE = 200 };
    for (int i = 0; i < MORE; i++) {
        pthread_t x;
        CHECK_RC(pthread_create(&x, (i % 2) ? &a : NULL, (i % 2) ? worker : self_detacher, NULL),
                 0);
    }
    pthread_attr_destroy(&a);

    pthread_mutex_lock(&m);
    release = 1;
    pthread_cond_broadcast(&c);
    struct timespec dl = compat_deadline_ms(CLOCK_REALTIME, COMPAT_LONG_MS);
    while (finished < MORE + 2) {
        int rc = pthread_cond_timedwait(&c, &m, &dl);
        CHECK(rc == 0 || finished == MORE + 2, "detached threads did not finish: %d of %d",
              finished, MORE + 2);
    }
    pthread_mutex_unlock(&m);
    return compat_ok();
}
