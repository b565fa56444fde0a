// rwlock_timed: pthread_rwlock_timedrdlock/timedwrlock (CLOCK_REALTIME) and
// pthread_rwlock_clockrdlock/clockwrlock (both clocks) — ETIMEDOUT never early while the lock is
// held in a conflicting mode by another thread; success when released in time; EINVAL for bad
// tv_nsec and for an unsupported clock when the lock is not available at once; a timed read lock
// succeeds at once while only readers hold it.
#include "../common/compat.h"

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t b;

static void* hold(void* arg) {
    int write = (int)(intptr_t)arg;
    CHECK_RC(write ? pthread_rwlock_wrlock(&rw) : pthread_rwlock_rdlock(&rw), 0);
    pthread_barrier_wait(&b);
    pthread_barrier_wait(&b);
    CHECK_RC(pthread_rwlock_unlock(&rw), 0);
    return NULL;
}

static void* hold_briefly(void* arg) {
    (void)arg;
    CHECK_RC(pthread_rwlock_wrlock(&rw), 0);
    pthread_barrier_wait(&b);
    usleep(50000);
    CHECK_RC(pthread_rwlock_unlock(&rw), 0);
    return NULL;
}

// One timed attempt in the given mode/clock/api that must time out.
static void timeout_case(int write, int clockapi, clockid_t clk) {
    struct timespec dl = compat_deadline_ms(clk, 25);
    int rc;
    if (clockapi)
        rc = write ? pthread_rwlock_clockwrlock(&rw, clk, &dl)
                   : pthread_rwlock_clockrdlock(&rw, clk, &dl);
    else
        rc = write ? pthread_rwlock_timedwrlock(&rw, &dl) : pthread_rwlock_timedrdlock(&rw, &dl);
    CHECK(rc == ETIMEDOUT, "write=%d clockapi=%d clock=%d: rc %d", write, clockapi, (int)clk, rc);
    CHECK(compat_reached(clk, &dl), "write=%d clockapi=%d clock=%d: early", write, clockapi,
          (int)clk);
}

int main(void) {
    compat_start("rwlock_timed");
    CHECK_RC(pthread_barrier_init(&b, NULL, 2), 0);

    // Write-held by another thread: both modes time out, all APIs and clocks.
    pthread_t t = compat_spawn(hold, (void*)1);
    pthread_barrier_wait(&b);
    for (int write = 0; write < 2; write++) {
        timeout_case(write, 0, CLOCK_REALTIME);
        timeout_case(write, 1, CLOCK_REALTIME);
        timeout_case(write, 1, CLOCK_MONOTONIC);
    }
    struct timespec bad = compat_deadline_ms(CLOCK_REALTIME, 1000);
    bad.tv_nsec = 1000000000L;
    CHECK_RC(pthread_rwlock_timedrdlock(&rw, &bad), EINVAL);
    CHECK_RC(pthread_rwlock_timedwrlock(&rw, &bad), EINVAL);
    bad.tv_nsec = -1;
    CHECK_RC(pthread_rwlock_clockrdlock(&rw, CLOCK_MONOTONIC, &bad), EINVAL);
    CHECK_RC(pthread_rwlock_clockwrlock(&rw, CLOCK_MONOTONIC, &bad), EINVAL);
    struct timespec dl = compat_deadline_ms(CLOCK_MONOTONIC, 1000);
    CHECK_RC(pthread_rwlock_clockrdlock(&rw, CLOCK_PROCESS_CPUTIME_ID, &dl), EINVAL);
    CHECK_RC(pthread_rwlock_clockwrlock(&rw, CLOCK_PROCESS_CPUTIME_ID, &dl), EINVAL);
    pthread_barrier_wait(&b);
    compat_join(t);

    // Read-held by another thread: writers time out, readers get in at once.
    t = compat_spawn(hold, (void*)0);
    pthread_barrier_wait(&b);
    timeout_case(1, 0, CLOCK_REALTIME);
    timeout_case(1, 1, CLOCK_MONOTONIC);
    dl = compat_deadline_ms(CLOCK_MONOTONIC, COMPAT_LONG_MS);
    CHECK_RC(pthread_rwlock_clockrdlock(&rw, CLOCK_MONOTONIC, &dl), 0);
    CHECK_RC(pthread_rwlock_unlock(&rw), 0);
    dl = compat_deadline_ms(CLOCK_REALTIME, COMPAT_LONG_MS);
    CHECK_RC(pthread_rwlock_timedrdlock(&rw, &dl), 0);
    CHECK_RC(pthread_rwlock_unlock(&rw), 0);
    pthread_barrier_wait(&b);
    compat_join(t);

    // Released in time: generous timed locks succeed.
    for (int i = 0; i < 4; i++) {
        t = compat_spawn(hold_briefly, NULL);
        pthread_barrier_wait(&b);
        clockid_t clk = i % 2 ? CLOCK_MONOTONIC : CLOCK_REALTIME;
        dl = compat_deadline_ms(clk, COMPAT_LONG_MS);
        int rc = i < 2 ? pthread_rwlock_clockwrlock(&rw, clk, &dl)
                       : pthread_rwlock_clockrdlock(&rw, clk, &dl);
        CHECK_RC(rc, 0);
        CHECK_RC(pthread_rwlock_unlock(&rw), 0);
        compat_join(t);
    }
    // Own write lock: timed relock is EDEADLK.
    CHECK_RC(pthread_rwlock_wrlock(&rw), 0);
    dl = compat_deadline_ms(CLOCK_REALTIME, 1000);
    CHECK_RC(pthread_rwlock_timedwrlock(&rw, &dl), EDEADLK);
    CHECK_RC(pthread_rwlock_timedrdlock(&rw, &dl), EDEADLK);
    CHECK_RC(pthread_rwlock_unlock(&rw), 0);
    return compat_ok();
}
