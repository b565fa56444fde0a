// c11_threads: C11 <threads.h> — thrd_create/join (result code), thrd_current/thrd_equal,
// thrd_detach, thrd_yield, thrd_exit from a nested call, thrd_sleep (never early; remaining time),
// mtx_init of plain/timed/recursive kinds, mtx_trylock thrd_busy, mtx_timedlock thrd_timedout,
// cnd_signal/broadcast/wait/timedwait (thrd_timedout, never early), tss_create with destructors,
// tss_get/tss_set, call_once with racing threads.
#include <threads.h>

#include "../common/compat.h"

static mtx_t m, tm, rm;
static cnd_t c;
static int flag;  // guarded by m
static tss_t key;
static int tss_dtor_calls;  // guarded by m
static once_flag once = ONCE_FLAG_INIT;
static int once_calls;

static void tss_dtor(void* v) {
    mtx_lock(&m);
    tss_dtor_calls += v != NULL;
    mtx_unlock(&m);
}

static void nested_exit(int v) {
    thrd_exit(v);
}

static int child(void* arg) {
    int v = (int)(intptr_t)arg;
    CHECK_EQ(tss_set(key, arg), thrd_success);
    CHECK(tss_get(key) == arg, "tss_get in child");
    if (v % 2) nested_exit(v * 10);
    return v * 10;
}

static int waiter(void* arg) {
    (void)arg;
    mtx_lock(&m);
    while (!flag) cnd_wait(&c, &m);
    mtx_unlock(&m);
    return 0;
}

static void init_once(void) {
    once_calls++;
}
static int once_racer(void* arg) {
    (void)arg;
    call_once(&once, init_once);
    return 0;
}

static int try_tm(void* arg) {
    (void)arg;
    return mtx_trylock(&tm);
}
static int timed_tm(void* arg) {
    (void)arg;
    struct timespec dl = compat_deadline_ms(CLOCK_REALTIME, 25);
    int rc = mtx_timedlock(&tm, &dl);
    if (rc == thrd_timedout && !compat_reached(CLOCK_REALTIME, &dl)) return -100;
    return rc;
}

int main(void) {
    compat_start("c11_threads");
    CHECK_EQ(mtx_init(&m, mtx_plain), thrd_success);
    CHECK_EQ(mtx_init(&tm, mtx_timed), thrd_success);
    CHECK_EQ(mtx_init(&rm, mtx_plain | mtx_recursive), thrd_success);
    CHECK_EQ(cnd_init(&c), thrd_success);
    CHECK_EQ(tss_create(&key, tss_dtor), thrd_success);

    thrd_t t[8];
    for (intptr_t i = 0; i < 8; i++)
        CHECK_EQ(thrd_create(&t[i], child, (void*)(i + 1)), thrd_success);
    for (int i = 0; i < 8; i++) {
        int res = -1;
        CHECK_EQ(thrd_join(t[i], &res), thrd_success);
        CHECK_EQ(res, (i + 1) * 10);
    }
    CHECK_EQ(tss_dtor_calls, 8);
    CHECK(thrd_equal(thrd_current(), thrd_current()), "thrd_equal(self, self)");
    CHECK(thrd_equal(thrd_current(), pthread_self()), "thrd_current != pthread_self");
    thrd_yield();

    // Detached thread waits on the condvar; broadcast releases it (we cannot join it: count it).
    thrd_t d;
    CHECK_EQ(thrd_create(&d, waiter, NULL), thrd_success);
    CHECK_EQ(thrd_detach(d), thrd_success);
    thrd_t w;
    CHECK_EQ(thrd_create(&w, waiter, NULL), thrd_success);

    // cnd_timedwait times out (predicate false), never early.
    mtx_lock(&m);
    struct timespec dl = compat_deadline_ms(CLOCK_REALTIME, 25);
    int rc;
    do rc = cnd_timedwait(&c, &m, &dl);
    while (rc == thrd_success);
    CHECK_EQ(rc, thrd_timedout);
    CHECK(compat_reached(CLOCK_REALTIME, &dl), "cnd_timedwait returned early");
    flag = 1;
    CHECK_EQ(cnd_broadcast(&c), thrd_success);
    mtx_unlock(&m);
    CHECK_EQ(thrd_join(w, NULL), thrd_success);
    CHECK_EQ(cnd_signal(&c), thrd_success);

    // Mutex kinds.
    CHECK_EQ(mtx_lock(&tm), thrd_success);
    CHECK_EQ(mtx_trylock(&tm), thrd_busy);
    thrd_t o;
    int res = 0;
    CHECK_EQ(thrd_create(&o, try_tm, NULL), thrd_success);
    CHECK_EQ(thrd_join(o, &res), thrd_success);
    CHECK_EQ(res, thrd_busy);
    CHECK_EQ(thrd_create(&o, timed_tm, NULL), thrd_success);
    CHECK_EQ(thrd_join(o, &res), thrd_success);
    CHECK_EQ(res, thrd_timedout);
    CHECK_EQ(mtx_unlock(&tm), thrd_success);
    for (int i = 0; i < 5; i++) CHECK_EQ(mtx_lock(&rm), thrd_success);
    CHECK_EQ(mtx_trylock(&rm), thrd_success);
    for (int i = 0; i < 6; i++) CHECK_EQ(mtx_unlock(&rm), thrd_success);

    // thrd_sleep: never early; 0 on completion.
    int64_t t0 = compat_now_ns(CLOCK_MONOTONIC);
    struct timespec req = {0, 30000000}, rem = {9, 9};
    CHECK_EQ(thrd_sleep(&req, &rem), 0);
    CHECK(compat_now_ns(CLOCK_MONOTONIC) - t0 >= 30000000LL, "thrd_sleep returned early");

    // call_once.
    thrd_t r[8];
    for (int i = 0; i < 8; i++) CHECK_EQ(thrd_create(&r[i], once_racer, NULL), thrd_success);
    for (int i = 0; i < 8; i++) CHECK_EQ(thrd_join(r[i], NULL), thrd_success);
    CHECK_EQ(once_calls, 1);

    tss_delete(key);
    cnd_destroy(&c);
    mtx_destroy(&rm);
    mtx_destroy(&tm);
    // m stays: the detached waiter may still be leaving it.
    return compat_ok();
}
