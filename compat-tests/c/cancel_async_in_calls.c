// cancel_async_in_calls: asynchronous cancellation acts while the cancelled thread spends much of
// its time inside calls arbrun interposes (where its library refuses to be interrupted: the
// cancellation must act once the thread is back in its own code, or at the call's return, as
// natively it acts in the system call). Each round, one thread loops in one pattern, main cancels
// it, and it must be joined, cancelled and cleaned up, within 5 s (natively: at once). Many
// rounds, so that the cancellation request lands at every point of the loop:
//   - compute, then read its own CPU-time clock (clock_gettime(CLOCK_THREAD_CPUTIME_ID)), in turn,
//     as a thread timing its own work does (about half of each turn inside the call);
//   - sched_yield and nothing else (a thread waiting for cancellation while it lets others run).
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "../common/compat.h"
#include "../common/compat_wait.h"

#define ROUNDS 40
#define BOUND_MS 5000

static atomic_int started;
static atomic_int cleanups;
static volatile unsigned long sink;

static void count_cleanup(void* arg) {
    (void)arg;
    atomic_fetch_add(&cleanups, 1);
}

static void* clock_reader(void* arg) {
    (void)arg;
    pthread_cleanup_push(count_cleanup, NULL);
    CHECK_RC(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL), 0);
    atomic_fetch_add(&started, 1);
    struct timespec cpu;
    for (;;) {
        for (int i = 0; i < 16; i++) sink++;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    }
    pthread_cleanup_pop(0);
    return NULL;
}

// Nearly all of its time inside sched_yield.
static void* yielder(void* arg) {
    (void)arg;
    pthread_cleanup_push(count_cleanup, NULL);
    CHECK_RC(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL), 0);
    atomic_fetch_add(&started, 1);
    for (;;) sched_yield();
    pthread_cleanup_pop(0);
    return NULL;
}

// Starts `fn`, cancels it once it loops, and checks that it was cancelled within BOUND_MS.
static void cancel_round(void* (*fn)(void*), const char* what, int round) {
    atomic_store(&started, 0);
    atomic_store(&cleanups, 0);
    pthread_t t = compat_spawn(fn, NULL);
    compat_wait_at_least(&started, 1, what);
    CHECK_RC(pthread_cancel(t), 0);
    struct timespec deadline = compat_deadline_ms(CLOCK_REALTIME, BOUND_MS);
    void* result = NULL;
    const int rc = pthread_timedjoin_np(t, &result, &deadline);
    CHECK(rc == 0, "%s: not cancelled within %d ms (round %d, timedjoin %d)", what, BOUND_MS, round,
          rc);
    CHECK(result == PTHREAD_CANCELED, "%s: not cancelled (round %d)", what, round);
    CHECK_EQ(atomic_load(&cleanups), 1);
}

int main(void) {
    compat_start("cancel_async_in_calls");
    for (int round = 0; round < ROUNDS; round++)
        cancel_round(clock_reader, "thread reading its CPU clock", round);
    for (int round = 0; round < ROUNDS; round++)
        cancel_round(yielder, "thread calling sched_yield", round);
    return compat_ok();
}
