// futex_bitset: FUTEX_WAIT_BITSET with absolute timeouts on CLOCK_MONOTONIC (default) and
// CLOCK_REALTIME (FUTEX_CLOCK_REALTIME) times out never before the deadline, private and shared;
// a bitset of 0 is EINVAL; FUTEX_WAKE_BITSET wakes only waiters whose bitset intersects. To know
// that all 6 waiters are asleep, they are first moved with FUTEX_CMP_REQUEUE (which counts the
// sleepers it moves) to a second word; wake counts are then exact: a disjoint bitset wakes 0,
// each group's bitset wakes exactly its 3.
#include <linux/futex.h>
#include <sys/syscall.h>

#include "../common/compat.h"

static long futex(uint32_t* uaddr, int op, uint32_t val, const struct timespec* ts,
                  uint32_t* uaddr2, uint32_t val3) {
    return syscall(SYS_futex, uaddr, op, val, ts, uaddr2, val3);
}

static uint32_t word, word2;  // futex words, always 0
static int release[2];        // per group: waiters leave once set
static int done[2];           // per group: waiters that left

// Waits with the group's bitset until the group is released.
static void* bit_waiter(void* arg) {
    int g = (int)(intptr_t)arg;
    uint32_t bits = g == 0 ? 0x1 : 0x2;
    while (!__atomic_load_n(&release[g], __ATOMIC_ACQUIRE)) {
        long r = futex(&word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 0, NULL, NULL, bits);
        CHECK(r == 0 || errno == EAGAIN || errno == EINTR, "WAIT_BITSET errno %d", errno);
    }
    __atomic_add_fetch(&done[g], 1, __ATOMIC_SEQ_CST);
    return NULL;
}

// Moves every sleeper on `word` to `word2` until `n` have been moved in total.
static void requeue_all(int n) {
    int moved = 0;
    int64_t give_up = compat_now_ns(CLOCK_MONOTONIC) + COMPAT_LONG_MS * 1000000LL;
    while (moved < n) {
        long r = futex(&word, FUTEX_CMP_REQUEUE | FUTEX_PRIVATE_FLAG, 0,
                       (const struct timespec*)(uintptr_t)INT32_MAX, &word2, 0);
        CHECK(r >= 0, "CMP_REQUEUE errno %d", errno);
        moved += (int)r;
        CHECK(compat_now_ns(CLOCK_MONOTONIC) < give_up, "only %d of %d waiters ever slept", moved,
              n);
        if (moved < n) usleep(1000);
    }
    CHECK_EQ(moved, n);
}

int main(void) {
    compat_start("futex_bitset");
    uint32_t v = 1;
    for (int shared = 0; shared < 2; shared++) {
        int pf = shared ? 0 : FUTEX_PRIVATE_FLAG;
        struct timespec dl = compat_deadline_ms(CLOCK_MONOTONIC, 30);
        CHECK_ERRNO(futex(&v, FUTEX_WAIT_BITSET | pf, 1, &dl, NULL, FUTEX_BITSET_MATCH_ANY),
                    ETIMEDOUT);
        CHECK(compat_reached(CLOCK_MONOTONIC, &dl), "WAIT_BITSET monotonic deadline early");
        dl = compat_deadline_ms(CLOCK_REALTIME, 30);
        CHECK_ERRNO(futex(&v, FUTEX_WAIT_BITSET | FUTEX_CLOCK_REALTIME | pf, 1, &dl, NULL,
                          FUTEX_BITSET_MATCH_ANY),
                    ETIMEDOUT);
        CHECK(compat_reached(CLOCK_REALTIME, &dl), "WAIT_BITSET realtime deadline early");
        struct timespec past = {1, 0};
        CHECK_ERRNO(futex(&v, FUTEX_WAIT_BITSET | pf, 1, &past, NULL, FUTEX_BITSET_MATCH_ANY),
                    ETIMEDOUT);
        CHECK_ERRNO(futex(&v, FUTEX_WAIT_BITSET | pf, 2, &dl, NULL, FUTEX_BITSET_MATCH_ANY),
                    EAGAIN);
        CHECK_ERRNO(futex(&v, FUTEX_WAIT_BITSET | pf, 1, &dl, NULL, 0), EINVAL);
        CHECK_ERRNO(futex(&v, FUTEX_WAKE_BITSET | pf, 1, NULL, NULL, 0), EINVAL);
        struct timespec bad = {dl.tv_sec, 1000000000L};
        CHECK_ERRNO(futex(&v, FUTEX_WAIT_BITSET | pf, 1, &bad, NULL, FUTEX_BITSET_MATCH_ANY),
                    EINVAL);
    }

    pthread_t t[6];
    for (intptr_t i = 0; i < 6; i++) t[i] = compat_spawn(bit_waiter, (void*)(i / 3));
    requeue_all(6);
    CHECK_EQ(futex(&word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT32_MAX, NULL, NULL, 0), 0);
    CHECK_EQ(futex(&word2, FUTEX_WAKE_BITSET | FUTEX_PRIVATE_FLAG, INT32_MAX, NULL, NULL, 0x4), 0);
    __atomic_store_n(&release[0], 1, __ATOMIC_RELEASE);
    CHECK_EQ(futex(&word2, FUTEX_WAKE_BITSET | FUTEX_PRIVATE_FLAG, INT32_MAX, NULL, NULL, 0x1), 3);
    for (int i = 0; i < 3; i++) compat_join(t[i]);
    CHECK_EQ(done[0], 3);
    CHECK_EQ(done[1], 0);
    CHECK_EQ(
        futex(&word2, FUTEX_WAKE_BITSET | FUTEX_PRIVATE_FLAG, INT32_MAX, NULL, NULL, 0x1 | 0x4), 0);
    __atomic_store_n(&release[1], 1, __ATOMIC_RELEASE);
    CHECK_EQ(
        futex(&word2, FUTEX_WAKE_BITSET | FUTEX_PRIVATE_FLAG, INT32_MAX, NULL, NULL, 0x2 | 0x8), 3);
    for (int i = 3; i < 6; i++) compat_join(t[i]);
    CHECK_EQ(done[1], 3);
    return compat_ok();
}
