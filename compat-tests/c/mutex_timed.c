// mutex_timed: pthread_mutex_timedlock (CLOCK_REALTIME) and pthread_mutex_clocklock (both clocks)
// — ETIMEDOUT while another thread holds the lock, never before the deadline; success when the
// holder releases in time; EINVAL for a bad timespec when the lock cannot be taken at once and
// for an unsupported clock; on every type (normal, recursive, errorcheck: EDEADLK on relock).
#include "../common/compat.h"

static pthread_mutex_t* target;
static pthread_barrier_t b;

// Holds *target until main passes the second barrier.
static void* holder(void* arg) {
    (void)arg;
    CHECK_RC(pthread_mutex_lock(target), 0);
    pthread_barrier_wait(&b);
    pthread_barrier_wait(&b);
    CHECK_RC(pthread_mutex_unlock(target), 0);
    return NULL;
}

// Holds *target for 50 ms, then releases it; main's generous timed lock must then succeed.
static void* brief_holder(void* arg) {
    (void)arg;
    CHECK_RC(pthread_mutex_lock(target), 0);
    pthread_barrier_wait(&b);
    usleep(50000);
    CHECK_RC(pthread_mutex_unlock(target), 0);
    return NULL;
}

static void check_type(int type) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, type);
    pthread_mutex_t mx;
    CHECK_RC(pthread_mutex_init(&mx, &a), 0);
    pthread_mutexattr_destroy(&a);
    target = &mx;

    // Free: every form succeeds at once, even with a deadline in the past.
    struct timespec past = {0, 0};
    CHECK_RC(pthread_mutex_timedlock(&mx, &past), 0);
    CHECK_RC(pthread_mutex_unlock(&mx), 0);
    CHECK_RC(pthread_mutex_clocklock(&mx, CLOCK_MONOTONIC, &past), 0);
    CHECK_RC(pthread_mutex_unlock(&mx), 0);

    pthread_t t = compat_spawn(holder, NULL);
    pthread_barrier_wait(&b);
    struct timespec dl = compat_deadline_ms(CLOCK_REALTIME, 30);
    CHECK_RC(pthread_mutex_timedlock(&mx, &dl), ETIMEDOUT);
    CHECK(compat_reached(CLOCK_REALTIME, &dl), "timedlock returned early (type %d)", type);
    dl = compat_deadline_ms(CLOCK_MONOTONIC, 30);
    CHECK_RC(pthread_mutex_clocklock(&mx, CLOCK_MONOTONIC, &dl), ETIMEDOUT);
    CHECK(compat_reached(CLOCK_MONOTONIC, &dl), "clocklock(MONOTONIC) early (type %d)", type);
    dl = compat_deadline_ms(CLOCK_REALTIME, 30);
    CHECK_RC(pthread_mutex_clocklock(&mx, CLOCK_REALTIME, &dl), ETIMEDOUT);
    CHECK(compat_reached(CLOCK_REALTIME, &dl), "clocklock(REALTIME) early (type %d)", type);
    CHECK_RC(pthread_mutex_timedlock(&mx, &past), ETIMEDOUT);
    struct timespec bad = compat_deadline_ms(CLOCK_REALTIME, 1000);
    bad.tv_nsec = 1000000000L;
    CHECK_RC(pthread_mutex_timedlock(&mx, &bad), EINVAL);
    bad.tv_nsec = -5;
    CHECK_RC(pthread_mutex_clocklock(&mx, CLOCK_MONOTONIC, &bad), EINVAL);
    dl = compat_deadline_ms(CLOCK_REALTIME, 1000);
    CHECK_RC(pthread_mutex_clocklock(&mx, CLOCK_PROCESS_CPUTIME_ID, &dl), EINVAL);
    pthread_barrier_wait(&b);
    compat_join(t);

    // Released while we wait: success well before the generous deadline.
    t = compat_spawn(brief_holder, NULL);
    pthread_barrier_wait(&b);
    dl = compat_deadline_ms(CLOCK_MONOTONIC, COMPAT_LONG_MS);
    CHECK_RC(pthread_mutex_clocklock(&mx, CLOCK_MONOTONIC, &dl), 0);
    if (type == PTHREAD_MUTEX_ERRORCHECK) {
        struct timespec d2 = compat_deadline_ms(CLOCK_REALTIME, 1000);
        CHECK_RC(pthread_mutex_timedlock(&mx, &d2), EDEADLK);
    }
    if (type == PTHREAD_MUTEX_RECURSIVE) {
        struct timespec d2 = compat_deadline_ms(CLOCK_REALTIME, 1000);
        CHECK_RC(pthread_mutex_timedlock(&mx, &d2), 0);
        CHECK_RC(pthread_mutex_unlock(&mx), 0);
    }
    CHECK_RC(pthread_mutex_unlock(&mx), 0);
    compat_join(t);
    t = compat_spawn(brief_holder, NULL);
    pthread_barrier_wait(&b);
    dl = compat_deadline_ms(CLOCK_REALTIME, COMPAT_LONG_MS);
    CHECK_RC(pthread_mutex_timedlock(&mx, &dl), 0);
    CHECK_RC(pthread_mutex_unlock(&mx), 0);
    compat_join(t);
    CHECK_RC(pthread_mutex_destroy(&mx), 0);
}

int main(void) {
    compat_start("mutex_timed");
    CHECK_RC(pthread_barrier_init(&b, NULL, 2), 0);
    check_type(PTHREAD_MUTEX_NORMAL);
    check_type(PTHREAD_MUTEX_RECURSIVE);
    check_type(PTHREAD_MUTEX_ERRORCHECK);
    check_type(PTHREAD_MUTEX_ADAPTIVE_NP);
    return compat_ok();
}
