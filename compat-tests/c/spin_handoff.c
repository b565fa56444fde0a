// spin_handoff: 6 threads pass a token 300 times (50 takes each), each waiting for it in a
// user-space spin loop (an atomic load and the pause instruction: no call and no system call), as
// hand-written spin barriers and lock-free queues do. The token must always go to another thread:
// its holder spins until someone else takes it (only the last thread with takes left may take it
// twice in a row). More threads than cores spin at once; natively the kernel's time slices move
// the token on, and under a user-thread runtime with a single core only preemption of the spinner
// lets another thread take it. Checked from the recorded order of takes: every take follows a
// different holder (or the other threads were all done), each thread takes exactly 50 times, the
// total is exact. Sizes: natively every handoff that needs a thread the kernel is not running
// costs a time slice (a strict ring order of 6 threads on 2 CPUs took ~6 ms per handoff, 300
// rounds 11 s); here the running threads hand the token between them (2 CPUs: ~10 ms in all),
// and with one CPU each of the 300 handoffs waits for a slice (~1 s natively).
#include "../common/compat.h"

enum { N = 6, TAKES = 50 };
// token: (number of takes so far << 8) | (holder + 1); written only by compare-and-swap.
static uint32_t token __attribute__((aligned(64)));
static int finished __attribute__((aligned(64)));  // threads that made all their takes
static int taken[N];  // takes per thread (written by its own thread, read after join)
static unsigned char order[N * TAKES];  // order[k]: who made take k (written by that taker)

// One pause per poll: the spin loop makes no call at all.
static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    __asm__ volatile("" ::: "memory");
#endif
}

// Takes the token TAKES times, never twice in a row while another thread still has takes left.
static void* member(void* arg) {
    int me = (int)(intptr_t)arg;
    while (taken[me] < TAKES) {
        uint32_t t = __atomic_load_n(&token, __ATOMIC_ACQUIRE);
        int holder = (int)(t & 0xff) - 1;
        // `finished` only grows: once it reads N - 1, every other thread is done for good.
        if (holder == me && __atomic_load_n(&finished, __ATOMIC_ACQUIRE) < N - 1) {
            cpu_relax();
            continue;
        }
        uint32_t next = (((t >> 8) + 1) << 8) | (uint32_t)(me + 1);
        if (__atomic_compare_exchange_n(&token, &t, next, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            order[t >> 8] = (unsigned char)me;
            taken[me]++;
        } else
            cpu_relax();
    }
    __atomic_add_fetch(&finished, 1, __ATOMIC_ACQ_REL);
    return NULL;
}

int main(void) {
    compat_start("spin_handoff");
    pthread_t t[N];
    for (int i = 0; i < N; i++) t[i] = compat_spawn(member, (void*)(intptr_t)i);
    for (int i = 0; i < N; i++) compat_join(t[i]);
    CHECK_EQ(token >> 8, N * TAKES);
    CHECK_EQ(finished, N);
    for (int i = 0; i < N; i++) CHECK_EQ(taken[i], TAKES);
    // From the recorded order: per-thread counts, and a repeat only once all others were done.
    int count[N] = {0}, done = 0;
    for (int k = 0; k < N * TAKES; k++) {
        int who = order[k];
        CHECK(who < N, "take %d by %d", k, who);
        CHECK(k == 0 || who != order[k - 1] || done == N - 1,
              "take %d: thread %d took twice in a row while others had takes left", k, who);
        if (++count[who] == TAKES) done++;
    }
    CHECK_EQ(done, N);
    return compat_ok();
}
