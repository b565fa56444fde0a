// raw_futex: futex operations issued by the program's own `syscall` instruction (inline assembly,
// never libc's syscall()), as Go, Rust's parking_lot-style crates and JIT runtimes do: an 8-thread
// token ring of FUTEX_WAIT/FUTEX_WAKE (2,000 rounds: more threads than cores, every handoff a
// wait), FUTEX_WAIT EAGAIN on a changed word and ETIMEDOUT after a relative timeout (never early),
// FUTEX_WAIT_BITSET with absolute deadlines on CLOCK_MONOTONIC and (FUTEX_CLOCK_REALTIME)
// CLOCK_REALTIME (never early), EINVAL for bitset 0, FUTEX_WAKE_BITSET waking only waiters whose
// bitset matches, and FUTEX_CMP_REQUEUE moving sleepers to a second word from which they are woken
// (exact counts, less the rare spurious re-wait the kernel does on the original word). Everything
// with and without FUTEX_PRIVATE_FLAG. Wakers never rely on sleeps: each one re-wakes until the
// waiter reports back, and counts what every wake returned.
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>

#include "../common/compat.h"
#include "../common/raw_syscall.h"

#if defined(__x86_64__)

// futex(2) through raw6; `val2` is the timeout pointer or the requeue count, as the op wants.
static long rfutex(uint32_t* uaddr, int op, uint32_t val, long val2, uint32_t* uaddr2,
                   uint32_t val3) {
    return raw6(SYS_futex, (long)uaddr, op, val, val2, (long)uaddr2, val3);
}

static int priv;  // FUTEX_PRIVATE_FLAG or 0; set by main before each phase, read by all threads

// A futex wait that may legitimately return without a wake (value changed, signal): anything else
// is a failure.
static void check_wait_result(long r, const char* what) {
    CHECK(r == 0 || r == -EAGAIN || r == -EINTR, "%s returned %ld", what, r);
}

// ---- 8-thread token ring -------------------------------------------------------------------

enum { RING = 8, ROUNDS = 2000 };
// slot[i].v counts the times thread i received the token; each word on its own cache line.
static struct {
    uint32_t v;
    char pad[60];
} slot[RING] __attribute__((aligned(64)));
static int passes;  // total handoffs, checked for the ring order by each receiver

// Thread i waits for its slot to reach round r + 1, checks the ring order, and hands on.
static void* ring_member(void* arg) {
    int me = (int)(intptr_t)arg;
    int next = (me + 1) % RING;
    for (uint32_t r = 0; r < ROUNDS; r++) {
        while (__atomic_load_n(&slot[me].v, __ATOMIC_ACQUIRE) == r)
            check_wait_result(rfutex(&slot[me].v, FUTEX_WAIT | priv, r, 0, NULL, 0), "ring WAIT");
        CHECK_EQ(__atomic_load_n(&slot[me].v, __ATOMIC_ACQUIRE), r + 1);
        int p = __atomic_load_n(&passes, __ATOMIC_RELAXED);
        CHECK(p == (int)r * RING + me, "thread %d round %u saw pass %d", me, r, p);
        __atomic_store_n(&passes, p + 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&slot[next].v, 1, __ATOMIC_RELEASE);
        long w = rfutex(&slot[next].v, FUTEX_WAKE | priv, 1, 0, NULL, 0);
        CHECK(w == 0 || w == 1, "ring WAKE returned %ld", w);
    }
    return NULL;
}

static void ring(void) {
    memset(slot, 0, sizeof slot);
    passes = 0;
    pthread_t t[RING];
    for (int i = 0; i < RING; i++) t[i] = compat_spawn(ring_member, (void*)(intptr_t)i);
    // Thread 0 receives its first token from main; the last pass of thread 7 goes unanswered.
    __atomic_add_fetch(&slot[0].v, 1, __ATOMIC_RELEASE);
    rfutex(&slot[0].v, FUTEX_WAKE | priv, 1, 0, NULL, 0);
    for (int i = 0; i < RING; i++) compat_join(t[i]);
    CHECK_EQ(passes, RING * ROUNDS);
    CHECK_EQ(slot[0].v, ROUNDS + 1);
}

// ---- single-thread errors and timeouts ---------------------------------------------------------

static void timeouts_and_errors(void) {
    uint32_t v = 5;
    CHECK_EQ(rfutex(&v, FUTEX_WAIT | priv, 6, 0, NULL, 0), -EAGAIN);
    CHECK_EQ(rfutex(&v, FUTEX_WAKE | priv, 1, 0, NULL, 0), 0);  // nobody waits

    // Relative timeout (measured on CLOCK_MONOTONIC, as the kernel does).
    struct timespec rel = {0, 20000000};
    int64_t t0 = compat_now_ns(CLOCK_MONOTONIC);
    CHECK_EQ(rfutex(&v, FUTEX_WAIT | priv, 5, (long)&rel, NULL, 0), -ETIMEDOUT);
    int64_t took = compat_now_ns(CLOCK_MONOTONIC) - t0;
    CHECK(took >= 20000000LL, "FUTEX_WAIT timed out after %lld ns < 20 ms", (long long)took);
    struct timespec bad = {0, 1000000000L};
    CHECK_EQ(rfutex(&v, FUTEX_WAIT | priv, 5, (long)&bad, NULL, 0), -EINVAL);

    // Absolute deadlines: FUTEX_WAIT_BITSET on CLOCK_MONOTONIC, then on CLOCK_REALTIME.
    struct timespec dl = compat_deadline_ms(CLOCK_MONOTONIC, 20);
    CHECK_EQ(rfutex(&v, FUTEX_WAIT_BITSET | priv, 5, (long)&dl, NULL, FUTEX_BITSET_MATCH_ANY),
             -ETIMEDOUT);
    CHECK(compat_reached(CLOCK_MONOTONIC, &dl), "WAIT_BITSET (monotonic) returned early");
    dl = compat_deadline_ms(CLOCK_REALTIME, 20);
    CHECK_EQ(rfutex(&v, FUTEX_WAIT_BITSET | FUTEX_CLOCK_REALTIME | priv, 5, (long)&dl, NULL,
                    FUTEX_BITSET_MATCH_ANY),
             -ETIMEDOUT);
    CHECK(compat_reached(CLOCK_REALTIME, &dl), "WAIT_BITSET (realtime) returned early");
    // A deadline already past times out at once; a changed value still says EAGAIN first.
    dl = compat_deadline_ms(CLOCK_MONOTONIC, -1000);
    CHECK_EQ(rfutex(&v, FUTEX_WAIT_BITSET | priv, 5, (long)&dl, NULL, 1), -ETIMEDOUT);
    CHECK_EQ(rfutex(&v, FUTEX_WAIT_BITSET | priv, 4, (long)&dl, NULL, 1), -EAGAIN);

    // Bitset 0 is invalid for both directions.
    CHECK_EQ(rfutex(&v, FUTEX_WAIT_BITSET | priv, 5, 0, NULL, 0), -EINVAL);
    CHECK_EQ(rfutex(&v, FUTEX_WAKE_BITSET | priv, 1, 0, NULL, 0), -EINVAL);
}

// ---- FUTEX_WAKE_BITSET selects by bitset ------------------------------------------------------

// A waiter sleeps on bit_word with its own bitset until released; it counts its wake-ups (wait
// returns of 0), so the waker can match them against what its wakes returned.
typedef struct {
    uint32_t bits;
    int released;  // set by main: leave at the next return
    int arrived;   // bumped before every wait
    int woken;     // wait returns of 0
    int done;
} bit_waiter;

static uint32_t bit_word;  // always 0

static void* bitset_waiter(void* arg) {
    bit_waiter* w = (bit_waiter*)arg;
    while (!__atomic_load_n(&w->released, __ATOMIC_ACQUIRE)) {
        __atomic_add_fetch(&w->arrived, 1, __ATOMIC_SEQ_CST);
        long r = rfutex(&bit_word, FUTEX_WAIT_BITSET | priv, 0, 0, NULL, w->bits);
        check_wait_result(r, "WAIT_BITSET");
        if (r == 0) __atomic_add_fetch(&w->woken, 1, __ATOMIC_SEQ_CST);
    }
    __atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

// Releases w by waking with `bits` until it reports done; returns how many waiters those wakes
// woke in all (each retry is needed only while w was not yet asleep).
static long release_by_bits(bit_waiter* w, uint32_t bits) {
    __atomic_store_n(&w->released, 1, __ATOMIC_RELEASE);
    long total = 0;
    int64_t give_up = compat_now_ns(CLOCK_MONOTONIC) + COMPAT_LONG_MS * 1000000LL;
    while (!__atomic_load_n(&w->done, __ATOMIC_ACQUIRE)) {
        long r = rfutex(&bit_word, FUTEX_WAKE_BITSET | priv, INT_MAX, 0, NULL, bits);
        CHECK(r >= 0 && r <= 1, "WAKE_BITSET %#x returned %ld", bits, r);
        total += r;
        CHECK(compat_now_ns(CLOCK_MONOTONIC) < give_up, "waiter with bits %#x never left", w->bits);
        sched_yield();
    }
    return total;
}

static void wake_bitset(void) {
    bit_waiter a = {.bits = 0x1}, b = {.bits = 0x6};
    pthread_t ta = compat_spawn(bitset_waiter, &a);
    pthread_t tb = compat_spawn(bitset_waiter, &b);
    while (!__atomic_load_n(&a.arrived, __ATOMIC_SEQ_CST) ||
           !__atomic_load_n(&b.arrived, __ATOMIC_SEQ_CST))
        sched_yield();
    // Bits nobody waits for wake nobody, asleep or not.
    for (int i = 0; i < 100; i++)
        CHECK_EQ(rfutex(&bit_word, FUTEX_WAKE_BITSET | priv, INT_MAX, 0, NULL, 0x8), 0);
    // 0x4 matches only b: every wake it did was b's, and a was never woken.
    long woke_b = release_by_bits(&b, 0x4);
    compat_join(tb);
    CHECK_EQ(woke_b, __atomic_load_n(&b.woken, __ATOMIC_SEQ_CST));
    CHECK_EQ(__atomic_load_n(&a.woken, __ATOMIC_SEQ_CST), 0);
    // FUTEX_BITSET_MATCH_ANY matches a.
    long woke_a = release_by_bits(&a, FUTEX_BITSET_MATCH_ANY);
    compat_join(ta);
    CHECK_EQ(woke_a, a.woken);
}

// ---- FUTEX_CMP_REQUEUE ------------------------------------------------------------------------

// The kernel may put a requeued waiter back on the word it first waited on: a spurious wake-up (a
// stale wake_q entry left by some other wait queue) makes futex_wait re-wait on the address the
// call passed, without returning to user space. The test therefore counts such re-waits instead of
// assuming they never happen, and fails when they are more than a rare accident.
enum { RQ = 4, RQ_REWAITS_TOLERATED = 2 };
static uint32_t rq_src, rq_dst;  // futex words, always 0
static int rq_go;                // waiters leave once set
static int rq_left;              // waiters that left
static int rq_rewaits;           // requeued waiters later found back on rq_src

// Waits on rq_src until released; a requeue moves it to rq_dst, from which main wakes it.
static void* requeue_waiter(void* arg) {
    (void)arg;
    while (!__atomic_load_n(&rq_go, __ATOMIC_ACQUIRE))
        check_wait_result(rfutex(&rq_src, FUTEX_WAIT | priv, 0, 0, NULL, 0), "requeue WAIT");
    __atomic_add_fetch(&rq_left, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

// Moves sleepers src -> dst until `want` were moved and src is empty. A waiter reaches src only
// by waiting (nobody wakes dst here), so the moves add up to exactly `want` unless the kernel
// re-waited one on src: a requeue then moves it along with the others (one more than left to
// move), or the empty-check's wake finds it, it waits on src again, and it is moved once more;
// either way it counts in rq_rewaits.
static void requeue_until_moved(int want, int64_t give_up) {
    int moved = 0;
    for (;;) {
        while (moved < want) {
            long r = rfutex(&rq_src, FUTEX_CMP_REQUEUE | priv, 0, INT_MAX, &rq_dst, 0);
            CHECK(r >= 0 && r <= RQ, "CMP_REQUEUE returned %ld (%d of %d moved)", r, moved, want);
            // More than were left to move: the rest were requeued before and re-waited on src
            // (counted, and moved back to dst with the others).
            if (r > want - moved) {
                rq_rewaits += (int)r - (want - moved);
                CHECK(rq_rewaits <= RQ_REWAITS_TOLERATED,
                      "%d requeued waiters were back on the source", rq_rewaits);
                r = want - moved;
            }
            moved += (int)r;
            CHECK(compat_now_ns(CLOCK_MONOTONIC) < give_up, "only %d of %d waiters slept", moved,
                  want);
            if (moved < want) sched_yield();
        }
        long back = rfutex(&rq_src, FUTEX_WAKE | priv, INT_MAX, 0, NULL, 0);
        CHECK(back >= 0 && back <= want, "WAKE on the emptied word returned %ld", back);
        if (back == 0) return;
        rq_rewaits += (int)back;
        CHECK(rq_rewaits <= RQ_REWAITS_TOLERATED, "%d requeued waiters were back on the source",
              rq_rewaits);
        moved -= (int)back;
    }
}

static void cmp_requeue(void) {
    rq_go = 0;
    rq_left = 0;
    rq_rewaits = 0;
    // The compared value differs: EAGAIN, nothing moved.
    CHECK_EQ(rfutex(&rq_src, FUTEX_CMP_REQUEUE | priv, 0, INT_MAX, &rq_dst, 1), -EAGAIN);
    pthread_t t[RQ];
    for (int i = 0; i < RQ; i++) t[i] = compat_spawn(requeue_waiter, NULL);
    int64_t give_up = compat_now_ns(CLOCK_MONOTONIC) + COMPAT_LONG_MS * 1000000LL;
    requeue_until_moved(RQ, give_up);
    CHECK_EQ(__atomic_load_n(&rq_left, __ATOMIC_SEQ_CST), 0);
    // Wake one from dst (it goes back to src since rq_go is clear), and move it back.
    CHECK_EQ(rfutex(&rq_dst, FUTEX_WAKE | priv, 1, 0, NULL, 0), 1);
    requeue_until_moved(1, give_up);
    // Release all: one wake on dst finds all RQ, less any the kernel re-waited on src since.
    __atomic_store_n(&rq_go, 1, __ATOMIC_RELEASE);
    long woken = rfutex(&rq_dst, FUTEX_WAKE | priv, INT_MAX, 0, NULL, 0);
    CHECK(woken >= 0 && woken <= RQ, "WAKE on the target returned %ld", woken);
    rq_rewaits += RQ - (int)woken;
    CHECK(rq_rewaits <= RQ_REWAITS_TOLERATED, "only %ld of %d waiters were on the target", woken,
          RQ);
    while (__atomic_load_n(&rq_left, __ATOMIC_SEQ_CST) < RQ) {
        CHECK(rfutex(&rq_src, FUTEX_WAKE | priv, INT_MAX, 0, NULL, 0) >= 0, "WAKE failed");
        CHECK(compat_now_ns(CLOCK_MONOTONIC) < give_up, "re-waited waiters never left");
        sched_yield();
    }
    for (int i = 0; i < RQ; i++) compat_join(t[i]);
    CHECK_EQ(rq_left, RQ);
}

static void phase(int private_flag) {
    priv = private_flag;
    timeouts_and_errors();
    ring();
    wake_bitset();
    cmp_requeue();
}

int main(void) {
    compat_start("raw_futex");
    phase(FUTEX_PRIVATE_FLAG);
    phase(0);
    return compat_ok();
}

#else
int main(void) {
    compat_start("raw_futex");
    printf("skip raw_futex: the inline syscall helper is written for x86-64 only\n");
    return 77;
}
#endif
