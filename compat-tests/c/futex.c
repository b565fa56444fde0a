// futex: raw futexes through syscall(SYS_futex) — FUTEX_WAIT returns EAGAIN when the value
// differs, ETIMEDOUT after a relative timeout (never early, measured on CLOCK_MONOTONIC);
// FUTEX_WAKE releases waiters (a handoff of 2,000 rounds between two threads, and 8 waiters
// released by one wake-all: each returns); all of it with and without FUTEX_PRIVATE_FLAG.
#include <linux/futex.h>
#include <sys/syscall.h>

#include "../common/compat.h"

static long futex(uint32_t* uaddr, int op, uint32_t val, const struct timespec* ts,
                  uint32_t* uaddr2, uint32_t val3) {
    return syscall(SYS_futex, uaddr, op, val, ts, uaddr2, val3);
}

static int priv;  // FUTEX_PRIVATE_FLAG or 0, set by main before each phase
static uint32_t word;
static uint32_t turn;

// Waits until *w != val (retrying on spurious returns and EAGAIN).
static void wait_while(uint32_t* w, uint32_t val) {
    while (__atomic_load_n(w, __ATOMIC_ACQUIRE) == val) {
        long r = futex(w, FUTEX_WAIT | priv, val, NULL, NULL, 0);
        CHECK(r == 0 || errno == EAGAIN || errno == EINTR, "FUTEX_WAIT: errno %d", errno);
    }
}

static void* handoff_peer(void* arg) {
    (void)arg;
    for (uint32_t i = 0; i < 2000; i++) {
        wait_while(&turn, 2 * i);  // wait for odd
        __atomic_store_n(&turn, 2 * i + 2, __ATOMIC_RELEASE);
        futex(&turn, FUTEX_WAKE | priv, 1, NULL, NULL, 0);
    }
    return NULL;
}

static int released;
static void* word_waiter(void* arg) {
    (void)arg;
    wait_while(&word, 0);
    __atomic_add_fetch(&released, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void phase(int private_flag) {
    priv = private_flag;
    uint32_t v = 5;
    // Value mismatch.
    CHECK_ERRNO(futex(&v, FUTEX_WAIT | priv, 6, NULL, NULL, 0), EAGAIN);
    // Relative timeout.
    struct timespec rel = {0, 30000000};
    int64_t t0 = compat_now_ns(CLOCK_MONOTONIC);
    CHECK_ERRNO(futex(&v, FUTEX_WAIT | priv, 5, &rel, NULL, 0), ETIMEDOUT);
    CHECK(compat_now_ns(CLOCK_MONOTONIC) - t0 >= 30000000LL, "FUTEX_WAIT timeout early");
    // Bad timeout.
    struct timespec bad = {0, 1000000000L};
    CHECK_ERRNO(futex(&v, FUTEX_WAIT | priv, 5, &bad, NULL, 0), EINVAL);
    // Wake with no waiters.
    CHECK_EQ(futex(&v, FUTEX_WAKE | priv, 1, NULL, NULL, 0), 0);

    // Handoff.
    turn = 0;
    pthread_t t = compat_spawn(handoff_peer, NULL);
    for (uint32_t i = 0; i < 2000; i++) {
        __atomic_store_n(&turn, 2 * i + 1, __ATOMIC_RELEASE);
        futex(&turn, FUTEX_WAKE | priv, 1, NULL, NULL, 0);
        wait_while(&turn, 2 * i + 1);
    }
    compat_join(t);
    CHECK_EQ(turn, 4000);

    // Wake-all.
    word = 0;
    released = 0;
    pthread_t w[8];
    for (int i = 0; i < 8; i++) w[i] = compat_spawn(word_waiter, NULL);
    usleep(10000);
    __atomic_store_n(&word, 1, __ATOMIC_RELEASE);
    long woken = futex(&word, FUTEX_WAKE | priv, INT32_MAX, NULL, NULL, 0);
    CHECK(woken >= 0 && woken <= 8, "FUTEX_WAKE returned %ld", woken);
    for (int i = 0; i < 8; i++) compat_join(w[i]);
    CHECK_EQ(released, 8);
}

int main(void) {
    compat_start("futex");
    phase(FUTEX_PRIVATE_FLAG);
    phase(0);
    return compat_ok();
}
