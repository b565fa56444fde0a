// cancel_async_compute: asynchronous cancellation takes effect promptly, wherever the thread
// computes: six threads (more than cores) in call-free loops, cancelled one by one while the
// others keep computing, each joined within 1 s of its pthread_cancel (the bound only catches a
// cancellation that waits for something else to happen: natively it is immediate); a thread
// spinning in pthread_spin_lock on a lock main holds; a cancellation that was pending while
// cancellation was disabled or deferred acts at once when pthread_setcancelstate(ENABLE) or
// pthread_setcanceltype(ASYNCHRONOUS) makes it actionable (neither returns).
#include <stdatomic.h>

#include "../common/compat.h"
#include "../common/compat_wait.h"

#define COMPUTERS 6
#define LATENCY_BOUND_NS 1000000000LL

static atomic_int started;
static atomic_int cleanups;
static atomic_int returned_from_enable;
static atomic_int cancel_sent;
static pthread_spinlock_t spin;
static volatile unsigned long sink[COMPUTERS];

static void count_cleanup(void* arg) {
    (void)arg;
    atomic_fetch_add(&cleanups, 1);
}

static void* compute(void* arg) {
    const int i = (int)(intptr_t)arg;
    pthread_cleanup_push(count_cleanup, NULL);
    CHECK_RC(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL), 0);
    atomic_fetch_add(&started, 1);
    for (;;) sink[i]++;  // no calls: only asynchronous cancellation can stop it
    pthread_cleanup_pop(0);
    return NULL;
}

static void* spin_waiter(void* arg) {
    (void)arg;
    pthread_cleanup_push(count_cleanup, NULL);
    CHECK_RC(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL), 0);
    atomic_fetch_add(&started, 1);
    pthread_spin_lock(&spin);  // main holds it for good
    COMPAT_FAIL("pthread_spin_lock returned while main holds the lock");
    pthread_cleanup_pop(0);
    return NULL;
}

// mode 0: cancellation disabled, then enabled (asynchronous type already set);
// mode 1: deferred type with the request pending, then switched to asynchronous.
static void* pending_then_actionable(void* arg) {
    const int mode = (int)(intptr_t)arg;
    pthread_cleanup_push(count_cleanup, NULL);
    if (mode == 0) {
        CHECK_RC(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL), 0);
        CHECK_RC(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL), 0);
    }
    atomic_fetch_add(&started, 1);
    while (!atomic_load(&cancel_sent)) {  // no cancellation point in here
    }
    if (mode == 0) {
        pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
    } else {
        pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
    }
    atomic_store(&returned_from_enable, 1);
    pthread_cleanup_pop(0);
    return NULL;
}

static void cancel_and_time(pthread_t t, const char* what) {
    const int64_t t0 = compat_now_ns(CLOCK_MONOTONIC);
    CHECK_RC(pthread_cancel(t), 0);
    CHECK(compat_join(t) == PTHREAD_CANCELED, "%s: not cancelled", what);
    const int64_t took = compat_now_ns(CLOCK_MONOTONIC) - t0;
    CHECK(took < LATENCY_BOUND_NS, "%s: cancellation took %lld ms", what,
          (long long)(took / 1000000));
}

int main(void) {
    compat_start("cancel_async_compute");
    for (int round = 0; round < 3; round++) {
        pthread_t t[COMPUTERS];
        atomic_store(&started, 0);
        atomic_store(&cleanups, 0);
        for (int i = 0; i < COMPUTERS; i++) t[i] = compat_spawn(compute, (void*)(intptr_t)i);
        compat_wait_at_least(&started, COMPUTERS, "computers started");
        for (int i = 0; i < COMPUTERS; i++) cancel_and_time(t[i], "computing thread");
        CHECK_EQ(atomic_load(&cleanups), COMPUTERS);
    }

    CHECK_RC(pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE), 0);
    CHECK_RC(pthread_spin_lock(&spin), 0);
    for (int round = 0; round < 5; round++) {
        atomic_store(&started, 0);
        atomic_store(&cleanups, 0);
        pthread_t t = compat_spawn(spin_waiter, NULL);
        compat_wait_at_least(&started, 1, "spin waiter started");
        cancel_and_time(t, "thread spinning in pthread_spin_lock");
        CHECK_EQ(atomic_load(&cleanups), 1);
    }
    CHECK_RC(pthread_spin_unlock(&spin), 0);

    for (int mode = 0; mode < 2; mode++) {
        for (int round = 0; round < 5; round++) {
            atomic_store(&started, 0);
            atomic_store(&cleanups, 0);
            atomic_store(&cancel_sent, 0);
            atomic_store(&returned_from_enable, 0);
            pthread_t t = compat_spawn(pending_then_actionable, (void*)(intptr_t)mode);
            compat_wait_at_least(&started, 1, "pending-cancel thread started");
            CHECK_RC(pthread_cancel(t), 0);
            atomic_store(&cancel_sent, 1);
            CHECK(compat_join(t) == PTHREAD_CANCELED, "pending cancellation did not act");
            CHECK(!atomic_load(&returned_from_enable),
                  mode == 0 ? "pthread_setcancelstate(ENABLE) returned with an async cancel pending"
                            : "pthread_setcanceltype(ASYNCHRONOUS) returned with a cancel pending");
            CHECK_EQ(atomic_load(&cleanups), 1);
        }
    }
    return compat_ok();
}
