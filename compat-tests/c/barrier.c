// barrier: pthread_barrier_wait — over 200 rounds with 6 threads exactly one thread per round gets
// PTHREAD_BARRIER_SERIAL_THREAD and the others 0; no thread enters round r+1 before all finished
// round r's work (checked through per-round counters); count 0 is EINVAL; a barrier of 1 always
// returns SERIAL; barrierattr pshared round trip.
#include "../common/compat.h"

enum { N = 6, ROUNDS = 200 };
static pthread_barrier_t bar;
static int arrived[ROUNDS];  // atomically incremented by each thread in round r
static int serials[ROUNDS];  // atomically incremented by the serial thread of round r

static void* worker(void* arg) {
    (void)arg;
    for (int r = 0; r < ROUNDS; r++) {
        __atomic_add_fetch(&arrived[r], 1, __ATOMIC_SEQ_CST);
        int rc = pthread_barrier_wait(&bar);
        CHECK(rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD, "barrier_wait returned %d", rc);
        if (rc == PTHREAD_BARRIER_SERIAL_THREAD)
            __atomic_add_fetch(&serials[r], 1, __ATOMIC_SEQ_CST);
        // Everyone has arrived in round r by now.
        CHECK(__atomic_load_n(&arrived[r], __ATOMIC_SEQ_CST) == N, "round %d: passed with %d of %d",
              r, arrived[r], N);
    }
    return NULL;
}

int main(void) {
    compat_start("barrier");
    CHECK_RC(pthread_barrier_init(&bar, NULL, 0), EINVAL);
    pthread_barrierattr_t a;
    CHECK_RC(pthread_barrierattr_init(&a), 0);
    int ps = -1;
    CHECK_RC(pthread_barrierattr_getpshared(&a, &ps), 0);
    CHECK_EQ(ps, PTHREAD_PROCESS_PRIVATE);
    CHECK_RC(pthread_barrierattr_setpshared(&a, 99), EINVAL);
    CHECK_RC(pthread_barrier_init(&bar, &a, N), 0);
    pthread_barrierattr_destroy(&a);
    pthread_t t[N];
    for (int i = 0; i < N; i++) t[i] = compat_spawn(worker, NULL);
    for (int i = 0; i < N; i++) compat_join(t[i]);
    for (int r = 0; r < ROUNDS; r++) {
        CHECK(serials[r] == 1, "round %d had %d serial threads", r, serials[r]);
        CHECK_EQ(arrived[r], N);
    }
    CHECK_RC(pthread_barrier_destroy(&bar), 0);

    pthread_barrier_t one;
    CHECK_RC(pthread_barrier_init(&one, NULL, 1), 0);
    for (int i = 0; i < 10; i++)
        CHECK_RC(pthread_barrier_wait(&one), PTHREAD_BARRIER_SERIAL_THREAD);
    CHECK_RC(pthread_barrier_destroy(&one), 0);
    return compat_ok();
}
