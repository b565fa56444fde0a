// mutex_contention: heavy contention on one default mutex by 8 threads (more than cores), mixing
// lock and trylock; a lock-ordered pair of mutexes taken in both orders through trylock back-off
// (no deadlock); exact counts at the end.
#include "../common/compat.h"

enum { NT = 8, ITERS = 50000 };
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;
static long counter, pair_counter;
static long busy_seen;  // trylock failures, guarded by m

static void* worker(void* arg) {
    intptr_t id = (intptr_t)arg;
    long busy = 0;
    for (int i = 0; i < ITERS; i++) {
        if (i % 3 == 0) {
            int rc;
            while ((rc = pthread_mutex_trylock(&m)) == EBUSY) {
                busy++;
                sched_yield();
            }
            CHECK_RC(rc, 0);
        } else {
            CHECK_RC(pthread_mutex_lock(&m), 0);
        }
        counter++;
        CHECK_RC(pthread_mutex_unlock(&m), 0);
    }
    // Two locks in opposite orders, with trylock back-off for the second one.
    pthread_mutex_t* first = id % 2 ? &a : &b;
    pthread_mutex_t* second = id % 2 ? &b : &a;
    for (int i = 0; i < ITERS / 10; i++) {
        for (;;) {
            pthread_mutex_lock(first);
            if (pthread_mutex_trylock(second) == 0) break;
            pthread_mutex_unlock(first);
            sched_yield();
        }
        pair_counter++;
        pthread_mutex_unlock(second);
        pthread_mutex_unlock(first);
    }
    pthread_mutex_lock(&m);
    busy_seen += busy;
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(void) {
    compat_start("mutex_contention");
    pthread_t t[NT];
    for (intptr_t i = 0; i < NT; i++) t[i] = compat_spawn(worker, (void*)i);
    for (int i = 0; i < NT; i++) compat_join(t[i]);
    CHECK_EQ(counter, (long)NT * ITERS);
    CHECK_EQ(pair_counter, (long)NT * (ITERS / 10));
    CHECK(busy_seen >= 0, "impossible");
    return compat_ok();
}
