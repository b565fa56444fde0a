// raw_futex_rtt: round trips between two threads that wait with FUTEX_WAIT and wake with
// FUTEX_WAKE issued by their own `syscall` instruction (never libc), as Go and libgomp do. Runs
// for about a second (at least 1,000 round trips); prints `raw_futex_rtt us_per_round_trip <v>`.
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>

#include "raw_syscall.h"  // compat-tests/common: the inline `syscall` helper

// turn counts half round trips: odd = the peer's move, even = main's. Own cache line.
static uint32_t turn __attribute__((aligned(64)));
static int stop;

// Monotonic nanoseconds for the elapsed time.
static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// Blocks until turn != seen (a kernel wait, retried on spurious or stale returns).
static void wait_change(uint32_t seen) {
    while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) == seen)
        raw6(SYS_futex, (long)&turn, FUTEX_WAIT_PRIVATE, seen, 0, 0, 0);
}

// Publishes the next move and wakes the other side.
static void advance(uint32_t to) {
    __atomic_store_n(&turn, to, __ATOMIC_RELEASE);
    raw6(SYS_futex, (long)&turn, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
}

// The peer answers every odd turn with the next even one until told to stop.
static void* peer(void* arg) {
    (void)arg;
    uint32_t t = 0;
    for (;;) {
        wait_change(t);
        t = __atomic_load_n(&turn, __ATOMIC_ACQUIRE);
        if (__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) return NULL;
        advance(++t);
    }
}

int main(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, peer, NULL) != 0) return 1;
    long long start = now_ns(), end = start;
    uint32_t v = 0;
    long trips = 0;
    while (trips < 1000 || end - start < 1000000000LL) {
        advance(++v);    // odd: the peer's move
        wait_change(v);  // the peer made it even
        v = __atomic_load_n(&turn, __ATOMIC_ACQUIRE);
        trips++;
        if ((trips & 63) == 0) end = now_ns();
    }
    end = now_ns();
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    advance(++v);
    pthread_join(t, NULL);
    printf("raw_futex_rtt us_per_round_trip %.3f\n", (end - start) / 1e3 / trips);
    return 0;
}
