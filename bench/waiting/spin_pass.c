// spin_pass: 4 threads pass a token between them, each waiting for it in a user-space spin loop
// (atomic load and pause, no call): the holder spins until another thread takes it, as in
// compat-tests/c/spin_handoff.c. With more threads than cores, a token only moves when a thread
// that may take it is running. Runs for about a second; prints `spin_pass us_per_handoff <v>`.
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

enum { N = 4 };
// token: (handoffs << 8) | (holder + 1); written only by compare-and-swap.
static uint64_t token __attribute__((aligned(64)));
static int stop __attribute__((aligned(64)));

// Monotonic nanoseconds for the elapsed time.
static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// Takes the token whenever another thread holds it, until main sets stop.
static void* member(void* arg) {
    uint64_t me = (uint64_t)(intptr_t)arg + 1;
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
        uint64_t t = __atomic_load_n(&token, __ATOMIC_ACQUIRE);
        if ((t & 0xff) == me || !__atomic_compare_exchange_n(&token, &t, (((t >> 8) + 1) << 8) | me,
                                                             0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            __builtin_ia32_pause();
    }
    return NULL;
}

int main(void) {
    pthread_t t[N];
    for (int i = 0; i < N; i++)
        if (pthread_create(&t[i], NULL, member, (void*)(intptr_t)i) != 0) return 1;
    long long start = now_ns();
    struct timespec second = {1, 0};
    nanosleep(&second, NULL);
    uint64_t handoffs = __atomic_load_n(&token, __ATOMIC_ACQUIRE) >> 8;
    long long end = now_ns();
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < N; i++) pthread_join(t[i], NULL);
    if (handoffs == 0) {
        printf("spin_pass us_per_handoff inf\n");
        return 0;
    }
    printf("spin_pass us_per_handoff %.4f\n", (end - start) / 1e3 / (double)handoffs);
    return 0;
}
