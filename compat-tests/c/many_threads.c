// many_threads: 5,000 threads with 64 KiB stacks (set through attributes) all blocked on one
// condvar at the same time; main waits until every one has arrived (a counter under the mutex),
// releases them with one broadcast, and joins them all; each returns its index.
#include "../common/compat.h"

enum { N = 5000 };
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t arrived = PTHREAD_COND_INITIALIZER, go_cond = PTHREAD_COND_INITIALIZER;
static int waiting;  // guarded by m
static int go;       // guarded by m

static void* blocked(void* arg) {
    pthread_mutex_lock(&m);
    if (++waiting == N) pthread_cond_signal(&arrived);
    while (!go) pthread_cond_wait(&go_cond, &m);
    pthread_mutex_unlock(&m);
    return arg;
}

int main(void) {
    compat_start("many_threads");
    pthread_attr_t a;
    CHECK_RC(pthread_attr_init(&a), 0);
    CHECK_RC(pthread_attr_setstacksize(&a, 64 * 1024), 0);
    static pthread_t t[N];
    for (intptr_t i = 0; i < N; i++) {
        int rc = pthread_create(&t[i], &a, blocked, (void*)i);
        CHECK(rc == 0, "pthread_create #%ld: %s", (long)i, strerror(rc));
    }
    pthread_attr_destroy(&a);
    pthread_mutex_lock(&m);
    struct timespec dl = compat_deadline_ms(CLOCK_REALTIME, COMPAT_LONG_MS);
    while (waiting < N)
        CHECK(pthread_cond_timedwait(&arrived, &m, &dl) == 0, "only %d of %d threads blocked",
              waiting, N);
    go = 1;
    pthread_cond_broadcast(&go_cond);
    pthread_mutex_unlock(&m);
    for (intptr_t i = 0; i < N; i++) CHECK_EQ((intptr_t)compat_join(t[i]), i);
    return compat_ok();
}
