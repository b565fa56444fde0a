// cpuclock: pthread_getcpuclockid — the clock of a thread that burned at least 30 ms of CPU
// (measured on its own CLOCK_THREAD_CPUTIME_ID) reads at least that much from main, its own
// clock agrees with CLOCK_THREAD_CPUTIME_ID, and the clock is monotonic.
#include "../common/compat.h"

static pthread_barrier_t b;
static volatile unsigned long sink;

// Burns CPU until its own thread CPU clock has advanced by `ms` milliseconds.
static void burn_ms(int64_t ms) {
    int64_t start = compat_now_ns(CLOCK_THREAD_CPUTIME_ID);
    while (compat_now_ns(CLOCK_THREAD_CPUTIME_ID) - start < ms * 1000000LL)
        for (int i = 0; i < 10000; i++) sink += i;
}

static void* burner(void* arg) {
    (void)arg;
    burn_ms(30);
    clockid_t own;
    CHECK_RC(pthread_getcpuclockid(pthread_self(), &own), 0);
    int64_t a = compat_now_ns(own);
    int64_t b2 = compat_now_ns(CLOCK_THREAD_CPUTIME_ID);
    int64_t c = compat_now_ns(own);
    CHECK(a <= b2 && b2 <= c, "own cpu clock and CLOCK_THREAD_CPUTIME_ID disagree: %lld %lld %lld",
          (long long)a, (long long)b2, (long long)c);
    CHECK(a >= 30000000LL, "own cpu clock %lld ns after burning 30 ms", (long long)a);
    pthread_barrier_wait(&b);  // main reads our clock while we are parked
    pthread_barrier_wait(&b);
    return NULL;
}

int main(void) {
    compat_start("cpuclock");
    CHECK_RC(pthread_barrier_init(&b, NULL, 2), 0);
    pthread_t t = compat_spawn(burner, NULL);
    pthread_barrier_wait(&b);
    clockid_t cid;
    CHECK_RC(pthread_getcpuclockid(t, &cid), 0);
    struct timespec res;
    CHECK_SYS(clock_getres(cid, &res));
    int64_t v1 = compat_now_ns(cid);
    int64_t v2 = compat_now_ns(cid);
    CHECK(v1 >= 30000000LL, "thread's cpu clock read from main: %lld ns", (long long)v1);
    CHECK(v2 >= v1, "cpu clock went backwards");
    pthread_barrier_wait(&b);
    compat_join(t);

    // Main's own clock.
    clockid_t mine;
    CHECK_RC(pthread_getcpuclockid(pthread_self(), &mine), 0);
    int64_t before = compat_now_ns(mine);
    burn_ms(10);
    int64_t after = compat_now_ns(mine);
    CHECK(after - before >= 10000000LL, "main's cpu clock advanced %lld ns while burning 10 ms",
          (long long)(after - before));
    return compat_ok();
}
