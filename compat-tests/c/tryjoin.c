// tryjoin: pthread_tryjoin_np (EBUSY while running, 0 after), pthread_timedjoin_np (ETIMEDOUT on
// CLOCK_REALTIME, never early) and pthread_clockjoin_np (both clocks, EINVAL for an unsupported
// clock).
#include "../common/compat.h"

static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;

// Blocks until main releases `gate`, so it is deterministically still running until then.
static void* blocked(void* arg) {
    pthread_mutex_lock(&gate);
    pthread_mutex_unlock(&gate);
    return arg;
}

int main(void) {
    compat_start("tryjoin");
    pthread_mutex_lock(&gate);
    pthread_t t = compat_spawn(blocked, (void*)42);
    void* ret = NULL;

    CHECK_RC(pthread_tryjoin_np(t, &ret), EBUSY);

    struct timespec dl = compat_deadline_ms(CLOCK_REALTIME, 30);
    CHECK_RC(pthread_timedjoin_np(t, &ret, &dl), ETIMEDOUT);
    CHECK(compat_reached(CLOCK_REALTIME, &dl), "timedjoin_np returned before its deadline");

    dl = compat_deadline_ms(CLOCK_MONOTONIC, 30);
    CHECK_RC(pthread_clockjoin_np(t, &ret, CLOCK_MONOTONIC, &dl), ETIMEDOUT);
    CHECK(compat_reached(CLOCK_MONOTONIC, &dl), "clockjoin_np(MONOTONIC) returned early");

    dl = compat_deadline_ms(CLOCK_REALTIME, 30);
    CHECK_RC(pthread_clockjoin_np(t, &ret, CLOCK_REALTIME, &dl), ETIMEDOUT);
    CHECK(compat_reached(CLOCK_REALTIME, &dl), "clockjoin_np(REALTIME) returned early");

    // A deadline in the past times out at once.
    struct timespec past = {0, 0};
    CHECK_RC(pthread_timedjoin_np(t, &ret, &past), ETIMEDOUT);

    // Unsupported clock. (A bad tv_nsec is not checked: glibc 2.36 loops on the kernel's EINVAL
    // instead of returning it, so no single behaviour can be expected.)
    dl = compat_deadline_ms(CLOCK_MONOTONIC, 1000);
    CHECK_RC(pthread_clockjoin_np(t, &ret, CLOCK_PROCESS_CPUTIME_ID, &dl), EINVAL);

    CHECK_RC(pthread_tryjoin_np(t, &ret), EBUSY);

    // Release it; a generous timed join now succeeds with the thread's result.
    pthread_mutex_unlock(&gate);
    dl = compat_deadline_ms(CLOCK_REALTIME, COMPAT_LONG_MS);
    CHECK_RC(pthread_timedjoin_np(t, &ret, &dl), 0);
    CHECK_EQ((intptr_t)ret, 42);

    // tryjoin succeeds once the thread has finished: poll until it does.
    t = compat_spawn(blocked, (void*)43);
    int rc;
    int64_t give_up = compat_now_ns(CLOCK_MONOTONIC) + COMPAT_LONG_MS * 1000000LL;
    while ((rc = pthread_tryjoin_np(t, &ret)) == EBUSY) {
        CHECK(compat_now_ns(CLOCK_MONOTONIC) < give_up, "tryjoin_np never succeeded");
        usleep(1000);
    }
    CHECK_RC(rc, 0);
    CHECK_EQ((intptr_t)ret, 43);

    // clockjoin_np on CLOCK_MONOTONIC joins a finishing thread.
    t = compat_spawn(blocked, (void*)44);
    dl = compat_deadline_ms(CLOCK_MONOTONIC, COMPAT_LONG_MS);
    CHECK_RC(pthread_clockjoin_np(t, &ret, CLOCK_MONOTONIC, &dl), 0);
    CHECK_EQ((intptr_t)ret, 44);
    return compat_ok();
}
