// cond_timed: pthread_cond_timedwait (default CLOCK_REALTIME and, after
// pthread_condattr_setclock, CLOCK_MONOTONIC) and pthread_cond_clockwait (both clocks) — ETIMEDOUT
// never before the deadline with the mutex re-acquired; EINVAL for tv_nsec out of range and for an
// unsupported clock; condattr_getclock round trip and EINVAL for CPU-time clocks; a signal before
// a generous deadline wakes the waiter with 0.
#include "../common/compat.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c_rt = PTHREAD_COND_INITIALIZER;
static pthread_cond_t c_mono;
static int flag;  // guarded by m

// Checks that the calling thread holds m (a normal mutex: trylock must report EBUSY).
static void check_held(const char* what) {
    CHECK(pthread_mutex_trylock(&m) == EBUSY, "%s: mutex not held after the wait", what);
}

static void expect_timeout(pthread_cond_t* c, clockid_t clk, int use_clockwait, const char* what) {
    pthread_mutex_lock(&m);
    struct timespec dl = compat_deadline_ms(clk, 25);
    int rc;
    do {
        rc = use_clockwait ? pthread_cond_clockwait(c, &m, clk, &dl)
                           : pthread_cond_timedwait(c, &m, &dl);
    } while (rc == 0);  // spurious wake-ups are allowed; only the final result matters
    CHECK_RC(rc, ETIMEDOUT);
    CHECK(compat_reached(clk, &dl), "%s: returned before the deadline", what);
    check_held(what);
    // A deadline in the past.
    struct timespec past = {0, 0};
    rc = use_clockwait ? pthread_cond_clockwait(c, &m, clk, &past)
                       : pthread_cond_timedwait(c, &m, &past);
    CHECK_RC(rc, ETIMEDOUT);
    check_held(what);
    // Invalid tv_nsec.
    struct timespec bad = compat_deadline_ms(clk, 1000);
    bad.tv_nsec = 1000000000L;
    rc = use_clockwait ? pthread_cond_clockwait(c, &m, clk, &bad)
                       : pthread_cond_timedwait(c, &m, &bad);
    CHECK_RC(rc, EINVAL);
    bad.tv_nsec = -1;
    rc = use_clockwait ? pthread_cond_clockwait(c, &m, clk, &bad)
                       : pthread_cond_timedwait(c, &m, &bad);
    CHECK_RC(rc, EINVAL);
    check_held(what);
    pthread_mutex_unlock(&m);
}

static pthread_cond_t* sig_c;
static void* signaller(void* arg) {
    (void)arg;
    usleep(20000);
    pthread_mutex_lock(&m);
    flag = 1;
    pthread_cond_broadcast(sig_c);
    pthread_mutex_unlock(&m);
    return NULL;
}

static void expect_signal(pthread_cond_t* c, clockid_t clk, int use_clockwait) {
    sig_c = c;
    flag = 0;
    pthread_t t = compat_spawn(signaller, NULL);
    pthread_mutex_lock(&m);
    struct timespec dl = compat_deadline_ms(clk, COMPAT_LONG_MS);
    while (!flag) {
        int rc = use_clockwait ? pthread_cond_clockwait(c, &m, clk, &dl)
                               : pthread_cond_timedwait(c, &m, &dl);
        CHECK_RC(rc, 0);
    }
    pthread_mutex_unlock(&m);
    compat_join(t);
}

int main(void) {
    compat_start("cond_timed");
    pthread_condattr_t a;
    CHECK_RC(pthread_condattr_init(&a), 0);
    clockid_t clk = -1;
    CHECK_RC(pthread_condattr_getclock(&a, &clk), 0);
    CHECK_EQ(clk, CLOCK_REALTIME);
    CHECK_RC(pthread_condattr_setclock(&a, CLOCK_PROCESS_CPUTIME_ID), EINVAL);
    CHECK_RC(pthread_condattr_setclock(&a, CLOCK_THREAD_CPUTIME_ID), EINVAL);
    CHECK_RC(pthread_condattr_setclock(&a, CLOCK_MONOTONIC), 0);
    CHECK_RC(pthread_condattr_getclock(&a, &clk), 0);
    CHECK_EQ(clk, CLOCK_MONOTONIC);
    CHECK_RC(pthread_cond_init(&c_mono, &a), 0);
    pthread_condattr_destroy(&a);

    expect_timeout(&c_rt, CLOCK_REALTIME, 0, "timedwait default clock");
    expect_timeout(&c_mono, CLOCK_MONOTONIC, 0, "timedwait monotonic condattr");
    expect_timeout(&c_rt, CLOCK_MONOTONIC, 1, "clockwait MONOTONIC");
    expect_timeout(&c_rt, CLOCK_REALTIME, 1, "clockwait REALTIME");
    expect_timeout(&c_mono, CLOCK_REALTIME, 1, "clockwait REALTIME on monotonic cond");

    pthread_mutex_lock(&m);
    struct timespec dl = compat_deadline_ms(CLOCK_MONOTONIC, 1000);
    CHECK_RC(pthread_cond_clockwait(&c_rt, &m, CLOCK_PROCESS_CPUTIME_ID, &dl), EINVAL);
    pthread_mutex_unlock(&m);

    expect_signal(&c_rt, CLOCK_REALTIME, 0);
    expect_signal(&c_mono, CLOCK_MONOTONIC, 0);
    expect_signal(&c_rt, CLOCK_MONOTONIC, 1);
    expect_signal(&c_mono, CLOCK_REALTIME, 1);
    CHECK_RC(pthread_cond_destroy(&c_mono), 0);
    return compat_ok();
}
