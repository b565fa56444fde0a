// cond_pingpong: two threads alternate 20,000 times through one mutex and two condvars, then 4
// threads pass a token around a ring (each waits for its turn with its own predicate on a shared
// condvar woken with broadcast): no lost wake-ups, exact turn order.
#include "../common/compat.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ping = PTHREAD_COND_INITIALIZER, pong = PTHREAD_COND_INITIALIZER;
static pthread_cond_t ring = PTHREAD_COND_INITIALIZER;
static int turn;   // guarded by m
static long hops;  // guarded by m
static int trace_ok = 1;

enum { ROUNDS = 20000, RING = 4, RING_ROUNDS = 5000 };

static void* ponger(void* arg) {
    (void)arg;
    pthread_mutex_lock(&m);
    for (int i = 0; i < ROUNDS; i++) {
        while (turn != 1) pthread_cond_wait(&ping, &m);
        turn = 0;
        pthread_cond_signal(&pong);
    }
    pthread_mutex_unlock(&m);
    return NULL;
}

static void* ring_member(void* arg) {
    int me = (int)(intptr_t)arg;
    pthread_mutex_lock(&m);
    for (int i = 0; i < RING_ROUNDS; i++) {
        while (turn != me) pthread_cond_wait(&ring, &m);
        if (hops % RING != me) trace_ok = 0;
        hops++;
        turn = (me + 1) % RING;
        pthread_cond_broadcast(&ring);
    }
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(void) {
    compat_start("cond_pingpong");
    pthread_t t = compat_spawn(ponger, NULL);
    pthread_mutex_lock(&m);
    for (int i = 0; i < ROUNDS; i++) {
        turn = 1;
        pthread_cond_signal(&ping);
        while (turn != 0) pthread_cond_wait(&pong, &m);
    }
    pthread_mutex_unlock(&m);
    compat_join(t);

    turn = 0;
    pthread_t r[RING];
    for (intptr_t i = 0; i < RING; i++) r[i] = compat_spawn(ring_member, (void*)i);
    for (int i = 0; i < RING; i++) compat_join(r[i]);
    CHECK_EQ(hops, (long)RING * RING_ROUNDS);
    CHECK(trace_ok, "ring order violated");
    return compat_ok();
}
