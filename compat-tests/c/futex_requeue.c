// futex_requeue: FUTEX_CMP_REQUEUE returns woken + requeued and fails with EAGAIN when the word
// changed; FUTEX_REQUEUE moves sleepers unconditionally; with 8 waiters known to be asleep (they
// are counted as CMP_REQUEUE moves them), the counts of every later wake are exact: one woken
// and the rest moved, nobody left on the source word, each move seen by the next wake. Done with
// and without FUTEX_PRIVATE_FLAG.
#include <linux/futex.h>
#include <sys/syscall.h>

#include "../common/compat.h"

static long futex(uint32_t* uaddr, int op, uint32_t val, long val2, uint32_t* uaddr2,
                  uint32_t val3) {
    return syscall(SYS_futex, uaddr, op, val, val2, uaddr2, val3);
}

enum { N = 8 };
static int priv;
static uint32_t f1, f2, f3;  // futex words, always 0
static int go;               // waiters leave once set
static int left;             // waiters that left

static void* waiter(void* arg) {
    (void)arg;
    while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE)) {
        long r = futex(&f1, FUTEX_WAIT | priv, 0, 0, NULL, 0);
        CHECK(r == 0 || errno == EAGAIN || errno == EINTR, "FUTEX_WAIT errno %d", errno);
    }
    __atomic_add_fetch(&left, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void phase(int private_flag) {
    priv = private_flag;
    go = 0;
    left = 0;
    // EAGAIN when the compared value differs.
    CHECK_ERRNO(futex(&f1, FUTEX_CMP_REQUEUE | priv, 0, 1, &f2, 1), EAGAIN);

    pthread_t t[N];
    for (int i = 0; i < N; i++) t[i] = compat_spawn(waiter, NULL);
    // Move sleepers f1 -> f2 until all N were moved (each returns to f1 only when woken).
    int moved = 0;
    int64_t give_up = compat_now_ns(CLOCK_MONOTONIC) + COMPAT_LONG_MS * 1000000LL;
    while (moved < N) {
        long r = futex(&f1, FUTEX_CMP_REQUEUE | priv, 0, INT32_MAX, &f2, 0);
        CHECK(r >= 0, "CMP_REQUEUE errno %d", errno);
        moved += (int)r;
        CHECK(compat_now_ns(CLOCK_MONOTONIC) < give_up, "only %d of %d waiters slept", moved, N);
        if (moved < N) usleep(1000);
    }
    CHECK_EQ(moved, N);
    CHECK_EQ(futex(&f1, FUTEX_WAKE | priv, INT32_MAX, 0, NULL, 0), 0);

    // Plain REQUEUE of everything f2 -> f3 (return value only checked for sign: its meaning
    // differs between documentation and kernels); then f2 is empty.
    CHECK(futex(&f2, FUTEX_REQUEUE | priv, 0, INT32_MAX, &f3, 0) >= 0, "FUTEX_REQUEUE errno %d",
          errno);
    CHECK_EQ(futex(&f2, FUTEX_WAKE | priv, INT32_MAX, 0, NULL, 0), 0);

    // CMP_REQUEUE f3 -> f2 waking 1 and moving 3: returns 4. The woken one goes back to f1.
    CHECK_EQ(futex(&f3, FUTEX_CMP_REQUEUE | priv, 1, 3, &f2, 0), 4);
    // Remaining: 4 on f3, 3 on f2, 1 heading back to f1.
    CHECK_EQ(futex(&f2, FUTEX_WAKE | priv, 1, 0, NULL, 0), 1);  // another one back to f1
    // Now: 4 on f3, 2 on f2, 2 on their way to f1. Gather the two back from f1 onto f2.
    moved = 0;
    give_up = compat_now_ns(CLOCK_MONOTONIC) + COMPAT_LONG_MS * 1000000LL;
    while (moved < 2) {
        long r = futex(&f1, FUTEX_CMP_REQUEUE | priv, 0, INT32_MAX, &f2, 0);
        CHECK(r >= 0, "CMP_REQUEUE errno %d", errno);
        moved += (int)r;
        CHECK(compat_now_ns(CLOCK_MONOTONIC) < give_up, "woken waiters did not return");
        if (moved < 2) usleep(1000);
    }
    CHECK_EQ(moved, 2);
    // Release all: f3 holds 4 and f2 holds 4.
    __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
    CHECK_EQ(futex(&f3, FUTEX_WAKE | priv, INT32_MAX, 0, NULL, 0), 4);
    CHECK_EQ(futex(&f2, FUTEX_WAKE | priv, INT32_MAX, 0, NULL, 0), 4);
    for (int i = 0; i < N; i++) compat_join(t[i]);
    CHECK_EQ(left, N);
}

int main(void) {
    compat_start("futex_requeue");
    phase(FUTEX_PRIVATE_FLAG);
    phase(0);
    return compat_ok();
}
