// signal_cond_storm: 300 threads wait on one condition variable (half with pthread_cond_wait, half
// with pthread_cond_timedwait) for 50 broadcast generations, while a signaller thread keeps
// sending SIGUSR1 to single waiters (pthread_kill) and SIGUSR2 to the process (kill), which only
// the waiters have unblocked; before each broadcast main waits until three more signals were
// handled by the waiting threads. Every waiter sees every generation exactly once (spurious
// wake-ups are absorbed by the predicate), every signal sent is handled exactly once (the next one
// to the same target is sent only after the previous was handled, so none merge) and in the right
// thread, and the program finishes as natively.
#include <stdatomic.h>

#include "../common/compat.h"
#include "../common/compat_wait.h"

#define WAITERS 300
#define GENERATIONS 50

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int generation;  // guarded by mutex
static int arrived;     // waiters that saw the current generation, guarded by mutex
static int finish;      // main lets the waiters return, guarded by mutex
static pthread_cond_t all_arrived = PTHREAD_COND_INITIALIZER;

static pthread_t waiters[WAITERS];
static atomic_int in_flight[WAITERS];  // a SIGUSR1 was sent to waiter i and not handled yet
static atomic_int usr1_sent, usr1_handled, usr2_sent, usr2_handled, process_in_flight;
static atomic_int wrong_thread, stop;
static atomic_int waiters_started;  // waiters that have set my_index: only those may be signalled
static __thread int my_index = -1;

static void on_usr1(int sig) {
    (void)sig;
    const int i = my_index;
    if (i < 0 || !atomic_load(&in_flight[i])) {
        atomic_store(&wrong_thread, 1);
        return;
    }
    atomic_fetch_add(&usr1_handled, 1);
    atomic_store(&in_flight[i], 0);
}

static void on_usr2(int sig) {
    (void)sig;
    if (my_index < 0) atomic_store(&wrong_thread, 1);  // only waiters have it unblocked
    atomic_fetch_add(&usr2_handled, 1);
    atomic_store(&process_in_flight, 0);
}

static void* waiter(void* arg) {
    my_index = (int)(intptr_t)arg;
    atomic_fetch_add(&waiters_started, 1);
    sigset_t usr2;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    CHECK_RC(pthread_sigmask(SIG_UNBLOCK, &usr2, NULL), 0);
    const int timed = my_index % 2;
    int seen = 0;
    CHECK_RC(pthread_mutex_lock(&mutex), 0);
    while (seen < GENERATIONS) {
        while (generation == seen) {
            if (timed) {
                struct timespec dl = compat_deadline_ms(CLOCK_REALTIME, COMPAT_LONG_MS);
                CHECK_RC(pthread_cond_timedwait(&cond, &mutex, &dl), 0);
            } else {
                CHECK_RC(pthread_cond_wait(&cond, &mutex), 0);
            }
        }
        CHECK_EQ(generation, seen + 1);  // never skips one: main waits for every arrival
        seen++;
        if (++arrived == WAITERS) CHECK_RC(pthread_cond_signal(&all_arrived), 0);
    }
    while (!finish) CHECK_RC(pthread_cond_wait(&cond, &mutex), 0);  // still a signal target
    CHECK_RC(pthread_mutex_unlock(&mutex), 0);
    return NULL;
}

static void* signaller(void* arg) {
    (void)arg;
    uint64_t rng = 0x9e3779b97f4a7c15ULL;
    while (!atomic_load(&stop)) {
        const int i = (int)(compat_rand(&rng) % WAITERS);
        if (!atomic_load(&in_flight[i])) {
            atomic_store(&in_flight[i], 1);
            CHECK_RC(pthread_kill(waiters[i], SIGUSR1), 0);
            atomic_fetch_add(&usr1_sent, 1);
        }
        if (!atomic_load(&process_in_flight)) {
            atomic_store(&process_in_flight, 1);
            CHECK_SYS(kill(getpid(), SIGUSR2));
            atomic_fetch_add(&usr2_sent, 1);
        }
        sched_yield();
    }
    return NULL;
}

int main(void) {
    compat_start("signal_cond_storm");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_usr1;
    CHECK_SYS(sigaction(SIGUSR1, &sa, NULL));
    sa.sa_handler = on_usr2;
    sa.sa_flags = SA_RESTART;
    CHECK_SYS(sigaction(SIGUSR2, &sa, NULL));
    sigset_t usr2;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    CHECK_RC(pthread_sigmask(SIG_BLOCK, &usr2, NULL), 0);  // inherited by every thread

    pthread_attr_t attr;
    CHECK_RC(pthread_attr_init(&attr), 0);
    CHECK_RC(pthread_attr_setstacksize(&attr, 128 * 1024), 0);
    for (int i = 0; i < WAITERS; i++)
        CHECK_RC(pthread_create(&waiters[i], &attr, waiter, (void*)(intptr_t)i), 0);
    CHECK_RC(pthread_attr_destroy(&attr), 0);
    // A SIGUSR1 sent to a thread that has not run yet is handled before it sets my_index, where the
    // handler cannot tell whose it is: signal only once every waiter has started.
    compat_wait_at_least(&waiters_started, WAITERS, "waiters started");
    pthread_t sig_thread = compat_spawn(signaller, NULL);

    CHECK_RC(pthread_mutex_lock(&mutex), 0);
    int handled_before = 0;
    for (int g = 0; g < GENERATIONS; g++) {
        if (g > 0) {
            struct timespec dl = compat_deadline_ms(CLOCK_REALTIME, COMPAT_LONG_MS);
            while (arrived < WAITERS)
                CHECK_RC(pthread_cond_timedwait(&all_arrived, &mutex, &dl), 0);
        }
        // Every waiter waits now: let a few signals land on the waiting threads first.
        CHECK_RC(pthread_mutex_unlock(&mutex), 0);
        const int64_t end = compat_now_ns(CLOCK_MONOTONIC) + COMPAT_LONG_MS * 1000000LL;
        while (atomic_load(&usr1_handled) + atomic_load(&usr2_handled) < handled_before + 3) {
            sched_yield();
            CHECK(compat_now_ns(CLOCK_MONOTONIC) < end, "signals to waiting threads not handled");
        }
        handled_before = atomic_load(&usr1_handled) + atomic_load(&usr2_handled);
        CHECK_RC(pthread_mutex_lock(&mutex), 0);
        arrived = 0;
        generation++;
        CHECK_RC(pthread_cond_broadcast(&cond), 0);
    }
    struct timespec dl = compat_deadline_ms(CLOCK_REALTIME, COMPAT_LONG_MS);
    while (arrived < WAITERS) CHECK_RC(pthread_cond_timedwait(&all_arrived, &mutex, &dl), 0);
    CHECK_RC(pthread_mutex_unlock(&mutex), 0);

    // Stop signalling while every waiter is still alive (waiting for `finish`), let the last
    // signals land, then let the waiters return.
    atomic_store(&stop, 1);
    compat_join(sig_thread);
    const int64_t end = compat_now_ns(CLOCK_MONOTONIC) + COMPAT_LONG_MS * 1000000LL;
    while (atomic_load(&usr1_handled) < atomic_load(&usr1_sent) ||
           atomic_load(&usr2_handled) < atomic_load(&usr2_sent)) {
        sched_yield();
        CHECK(compat_now_ns(CLOCK_MONOTONIC) < end, "signals not handled: usr1 %d/%d usr2 %d/%d",
              atomic_load(&usr1_handled), atomic_load(&usr1_sent), atomic_load(&usr2_handled),
              atomic_load(&usr2_sent));
    }
    CHECK_RC(pthread_mutex_lock(&mutex), 0);
    finish = 1;
    CHECK_RC(pthread_cond_broadcast(&cond), 0);
    CHECK_RC(pthread_mutex_unlock(&mutex), 0);
    for (int i = 0; i < WAITERS; i++) compat_join(waiters[i]);
    CHECK(!atomic_load(&wrong_thread), "a handler ran in the wrong thread");
    CHECK_EQ(atomic_load(&usr1_handled), atomic_load(&usr1_sent));
    CHECK_EQ(atomic_load(&usr2_handled), atomic_load(&usr2_sent));
    CHECK(atomic_load(&usr1_sent) > 0 && atomic_load(&usr2_sent) > 0, "no signals were sent");
    return compat_ok();
}
