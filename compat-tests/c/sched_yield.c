// sched_yield: sched_yield and the deprecated pthread_yield return 0; 8 threads (more than cores)
// pass a token around a ring where each waits for its turn spinning only on sched_yield (even
// threads) or on the pthread_yield symbol itself (odd threads: old binaries such as sysbench bind
// it; glibc 2.34+ headers redirect the C name to sched_yield), raytrace/PARSEC style spin-wait,
// 2,000 laps, exact order (the master-spinning variant is yield_spin).
#include <sched.h>

#include "../common/compat.h"

enum { N = 8, LAPS = 2000 };
static volatile int token;
static long passes;

// The exported pthread_yield symbol, as a binary built against an older glibc calls it (2.34 made
// it a compatibility symbol, so bind its version explicitly).
extern int legacy_pthread_yield(void);
__asm__(".symver legacy_pthread_yield, pthread_yield@GLIBC_2.2.5");

static void* ring(void* arg) {
    int me = (int)(intptr_t)arg;
    int (*yield)(void) = me % 2 ? legacy_pthread_yield : sched_yield;
    for (int lap = 0; lap < LAPS; lap++) {
        while (__atomic_load_n(&token, __ATOMIC_ACQUIRE) != me) CHECK_SYS(yield());
        passes++;  // only the token holder touches it
        __atomic_store_n(&token, (me + 1) % N, __ATOMIC_RELEASE);
    }
    return NULL;
}

// pthread_yield is deprecated in glibc 2.34 but old binaries still call it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static int old_yield(void) {
    return pthread_yield();
}
#pragma GCC diagnostic pop

int main(void) {
    compat_start("sched_yield");
    CHECK_EQ(sched_yield(), 0);
    CHECK_RC(old_yield(), 0);
    CHECK_RC(legacy_pthread_yield(), 0);
    pthread_t t[N];
    for (intptr_t i = 0; i < N; i++) t[i] = compat_spawn(ring, (void*)i);
    for (int i = 0; i < N; i++) compat_join(t[i]);
    CHECK_EQ(passes, (long)N * LAPS);
    CHECK_EQ(token, 0);
    return compat_ok();
}
