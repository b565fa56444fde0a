// sleeps: sleep, usleep, nanosleep, clock_nanosleep (relative and TIMER_ABSTIME on
// CLOCK_MONOTONIC and CLOCK_REALTIME) and thrd_sleep never return early (checked on the clock
// they use); nanosleep/clock_nanosleep reject a bad timespec with EINVAL; zero sleeps return at
// once; 64 threads sleeping 100 ms each at the same time finish together (sleeping must not
// serialise threads: the run takes far less than the 6.4 s a serial run would).
#include <threads.h>

#include "../common/compat.h"

static int64_t elapsed_since(int64_t t0) {
    return compat_now_ns(CLOCK_MONOTONIC) - t0;
}

static void* sleeper(void* arg) {
    int kind = (int)(intptr_t)arg % 5;
    int64_t t0 = compat_now_ns(CLOCK_MONOTONIC);
    struct timespec req = {0, 100000000};
    switch (kind) {
        case 0:
            CHECK_SYS(usleep(100000));
            break;
        case 1:
            CHECK_SYS(nanosleep(&req, NULL));
            break;
        case 2:
            CHECK_RC(clock_nanosleep(CLOCK_MONOTONIC, 0, &req, NULL), 0);
            break;
        case 3: {
            struct timespec dl = compat_deadline_ms(CLOCK_MONOTONIC, 100);
            CHECK_RC(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &dl, NULL), 0);
            break;
        }
        default:
            CHECK_EQ(thrd_sleep(&req, NULL), 0);
            break;
    }
    CHECK(elapsed_since(t0) >= 100000000LL, "kind %d slept only %lld ns", kind,
          (long long)elapsed_since(t0));
    return NULL;
}

// sleep(1) runs in its own thread, beside the other checks, to keep the program short.
static void* one_second(void* arg) {
    (void)arg;
    int64_t t0 = compat_now_ns(CLOCK_MONOTONIC);
    CHECK_EQ(sleep(1), 0);
    CHECK(elapsed_since(t0) >= 1000000000LL, "sleep(1) returned early");
    CHECK_EQ(sleep(0), 0);
    return NULL;
}

int main(void) {
    compat_start("sleeps");
    pthread_t one = compat_spawn(one_second, NULL);
    int64_t t0 = compat_now_ns(CLOCK_MONOTONIC);
    CHECK_SYS(usleep(30000));
    CHECK(elapsed_since(t0) >= 30000000LL, "usleep returned early");
    CHECK_SYS(usleep(0));

    struct timespec req = {0, 30000000}, rem = {7, 7};
    t0 = compat_now_ns(CLOCK_MONOTONIC);
    CHECK_SYS(nanosleep(&req, &rem));
    CHECK(elapsed_since(t0) >= 30000000LL, "nanosleep returned early");
    struct timespec zero = {0, 0};
    CHECK_SYS(nanosleep(&zero, NULL));
    struct timespec bad = {0, 1000000000L};
    CHECK_ERRNO(nanosleep(&bad, NULL), EINVAL);
    bad.tv_nsec = -1;
    CHECK_ERRNO(nanosleep(&bad, NULL), EINVAL);
    bad.tv_sec = -1;
    bad.tv_nsec = 0;
    CHECK_ERRNO(nanosleep(&bad, NULL), EINVAL);

    clockid_t clocks[2] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
    for (int i = 0; i < 2; i++) {
        clockid_t clk = clocks[i];
        int64_t c0 = compat_now_ns(clk);
        CHECK_RC(clock_nanosleep(clk, 0, &req, NULL), 0);
        CHECK(compat_now_ns(clk) - c0 >= 30000000LL, "relative clock_nanosleep(%d) early",
              (int)clk);
        struct timespec dl = compat_deadline_ms(clk, 30);
        CHECK_RC(clock_nanosleep(clk, TIMER_ABSTIME, &dl, NULL), 0);
        CHECK(compat_reached(clk, &dl), "absolute clock_nanosleep(%d) early", (int)clk);
        struct timespec past = {1, 0};
        CHECK_RC(clock_nanosleep(clk, TIMER_ABSTIME, &past, NULL), 0);
        struct timespec b2 = {0, 1000000000L};
        CHECK_RC(clock_nanosleep(clk, 0, &b2, NULL), EINVAL);
        CHECK_RC(clock_nanosleep(clk, TIMER_ABSTIME, &b2, NULL), EINVAL);
    }
    // CLOCK_THREAD_CPUTIME_ID is not a valid clock for clock_nanosleep.
    CHECK_RC(clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &req, NULL), EINVAL);

    t0 = compat_now_ns(CLOCK_MONOTONIC);
    CHECK_EQ(thrd_sleep(&req, NULL), 0);
    CHECK(elapsed_since(t0) >= 30000000LL, "thrd_sleep returned early");

    // Concurrent sleepers.
    enum { N = 64 };
    pthread_t t[N];
    t0 = compat_now_ns(CLOCK_MONOTONIC);
    for (intptr_t i = 0; i < N; i++) t[i] = compat_spawn(sleeper, (void*)i);
    for (int i = 0; i < N; i++) compat_join(t[i]);
    int64_t took = elapsed_since(t0);
    CHECK(took < 3000000000LL, "64 concurrent 100 ms sleeps took %lld ms (serialised?)",
          (long long)(took / 1000000));
    compat_join(one);
    return compat_ok();
}
