// signal_during_wait: a signal sent with pthread_kill to a thread blocked in pthread_mutex_lock,
// pthread_mutex_timedlock, pthread_rwlock_{rd,wr}lock and their timed forms, pthread_barrier_wait,
// pthread_cond_wait/timedwait, pthread_spin_lock (spinning) or pthread_once (another thread runs
// the routine) runs its handler in that thread while it waits, and then the wait goes on and
// succeeds (a condvar wait may return spuriously: the predicate loop absorbs it). Handlers with
// and without SA_RESTART alternate.
//
// Each round: main takes the resource, the worker announces that it is about to wait and waits;
// main signals it and waits for the handler to have run (in the worker, checked with
// pthread_self) BEFORE it releases the resource. Correct whether the signal lands before or
// during the wait; a wait that only takes its signal once it has the resource never sees the
// resource released (fails after 20 s). 100 rounds per primitive (25 for the spinlock) with a
// varying number of sched_yield()s before the signal, so that most rounds really race with the
// wait.
#include <semaphore.h>
#include <stdatomic.h>

#include "../common/compat.h"
#include "../common/compat_wait.h"

#define ROUNDS 100

static pthread_t expected;       // the thread the next signal is meant for (set before kill)
static atomic_int handled;       // handlers run so far
static atomic_int wrong_thread;  // a handler ran elsewhere
static atomic_int announced;     // round number the worker is about to wait in
static sem_t go, done;           // main -> worker: start the round; worker -> main: finished

static void on_signal(int sig) {
    (void)sig;
    if (!pthread_equal(pthread_self(), expected)) atomic_store(&wrong_thread, 1);
    atomic_fetch_add(&handled, 1);
}

// ---- The resources and what the worker and main do with them, per primitive.
enum kind {
    MUTEX,
    MUTEX_TIMED,
    RDLOCK,
    WRLOCK,
    RDLOCK_TIMED,
    WRLOCK_TIMED,
    BARRIER,
    COND,
    COND_TIMED,
    SPIN,
    ONCE,
    KINDS
};
static const char* const kind_names[KINDS] = {"pthread_mutex_lock",
                                              "pthread_mutex_timedlock",
                                              "pthread_rwlock_rdlock",
                                              "pthread_rwlock_wrlock",
                                              "pthread_rwlock_timedrdlock",
                                              "pthread_rwlock_timedwrlock",
                                              "pthread_barrier_wait",
                                              "pthread_cond_wait",
                                              "pthread_cond_timedwait",
                                              "pthread_spin_lock",
                                              "pthread_once"};

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t barrier;
static pthread_mutex_t cond_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int predicate;  // guarded by cond_mutex
static pthread_spinlock_t spin;
static pthread_once_t onces[ROUNDS];
static atomic_int once_runs;     // how many times an init routine ran
static atomic_int init_entered;  // round whose init routine is running
static atomic_int init_release;  // round whose init routine may return
static atomic_int runner_go;     // rounds the once runner may start
static atomic_int serial_count;  // PTHREAD_BARRIER_SERIAL_THREAD results
static volatile enum kind current;
static volatile int round_no;
static int total;  // rounds run (main only)

static void once_init(void) {
    atomic_fetch_add(&once_runs, 1);
    atomic_store(&init_entered, round_no + 1);
    compat_wait_at_least(&init_release, round_no + 1, "once init release");
}

// The thread that runs each round's once routine (it blocks inside it until main says so).
static void* once_runner(void* arg) {
    (void)arg;
    for (int r = 0; r < ROUNDS; r++) {
        compat_wait_at_least(&runner_go, r + 1, "once runner start");
        CHECK_RC(pthread_once(&onces[r], once_init), 0);
    }
    return NULL;
}

static void worker_wait(enum kind k) {
    struct timespec dl = compat_deadline_ms(CLOCK_REALTIME, COMPAT_LONG_MS);
    int rc;
    switch (k) {
        case MUTEX:
            CHECK_RC(pthread_mutex_lock(&mutex), 0);
            CHECK_RC(pthread_mutex_unlock(&mutex), 0);
            break;
        case MUTEX_TIMED:
            CHECK_RC(pthread_mutex_timedlock(&mutex, &dl), 0);
            CHECK_RC(pthread_mutex_unlock(&mutex), 0);
            break;
        case RDLOCK:
            CHECK_RC(pthread_rwlock_rdlock(&rwlock), 0);
            CHECK_RC(pthread_rwlock_unlock(&rwlock), 0);
            break;
        case WRLOCK:
            CHECK_RC(pthread_rwlock_wrlock(&rwlock), 0);
            CHECK_RC(pthread_rwlock_unlock(&rwlock), 0);
            break;
        case RDLOCK_TIMED:
            CHECK_RC(pthread_rwlock_timedrdlock(&rwlock, &dl), 0);
            CHECK_RC(pthread_rwlock_unlock(&rwlock), 0);
            break;
        case WRLOCK_TIMED:
            CHECK_RC(pthread_rwlock_timedwrlock(&rwlock, &dl), 0);
            CHECK_RC(pthread_rwlock_unlock(&rwlock), 0);
            break;
        case BARRIER:
            rc = pthread_barrier_wait(&barrier);
            CHECK(rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD, "barrier_wait: %d", rc);
            if (rc == PTHREAD_BARRIER_SERIAL_THREAD) atomic_fetch_add(&serial_count, 1);
            break;
        case COND:
        case COND_TIMED:
            CHECK_RC(pthread_mutex_lock(&cond_mutex), 0);
            atomic_store(&announced, round_no + 1);  // announced with the mutex held
            while (!predicate) {
                if (k == COND) {
                    CHECK_RC(pthread_cond_wait(&cond, &cond_mutex), 0);
                } else {
                    CHECK_RC(pthread_cond_timedwait(&cond, &cond_mutex, &dl), 0);
                }
            }
            CHECK_RC(pthread_mutex_unlock(&cond_mutex), 0);
            break;
        case SPIN:
            CHECK_RC(pthread_spin_lock(&spin), 0);
            CHECK_RC(pthread_spin_unlock(&spin), 0);
            break;
        case ONCE:
            CHECK_RC(pthread_once(&onces[round_no], once_init), 0);
            CHECK(atomic_load(&init_release) == round_no + 1, "pthread_once returned early");
            break;
        case KINDS:
            break;
    }
}

static void* worker(void* arg) {
    (void)arg;
    for (;;) {
        compat_sem_wait_through_signals(&go);
        const enum kind k = current;
        if (k == KINDS) return NULL;
        if (k != COND && k != COND_TIMED) atomic_store(&announced, round_no + 1);
        worker_wait(k);
        CHECK_SYS(sem_post(&done));
    }
}

// Main's side: hold the resource so that the worker must wait.
static void take(enum kind k) {
    switch (k) {
        case MUTEX:
        case MUTEX_TIMED:
            CHECK_RC(pthread_mutex_lock(&mutex), 0);
            break;
        case RDLOCK:
        case RDLOCK_TIMED:
            CHECK_RC(pthread_rwlock_wrlock(&rwlock), 0);
            break;
        case WRLOCK:
        case WRLOCK_TIMED:
            CHECK_RC(pthread_rwlock_rdlock(&rwlock), 0);
            break;
        case SPIN:
            CHECK_RC(pthread_spin_lock(&spin), 0);
            break;
        case ONCE:
            atomic_store(&runner_go, round_no + 1);  // lets the runner start this round's once
            compat_wait_at_least(&init_entered, round_no + 1, "once init entered");
            break;
        default:
            break;
    }
}

// Main's side: let the worker's wait complete.
static void release(enum kind k) {
    int rc;
    switch (k) {
        case MUTEX:
        case MUTEX_TIMED:
            CHECK_RC(pthread_mutex_unlock(&mutex), 0);
            break;
        case RDLOCK:
        case RDLOCK_TIMED:
        case WRLOCK:
        case WRLOCK_TIMED:
            CHECK_RC(pthread_rwlock_unlock(&rwlock), 0);
            break;
        case BARRIER:
            rc = pthread_barrier_wait(&barrier);
            CHECK(rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD, "barrier_wait: %d", rc);
            if (rc == PTHREAD_BARRIER_SERIAL_THREAD) atomic_fetch_add(&serial_count, 1);
            break;
        case COND:
        case COND_TIMED:
            CHECK_RC(pthread_mutex_lock(&cond_mutex), 0);
            predicate = 1;
            CHECK_RC(pthread_cond_signal(&cond), 0);
            CHECK_RC(pthread_mutex_unlock(&cond_mutex), 0);
            break;
        case SPIN:
            CHECK_RC(pthread_spin_unlock(&spin), 0);
            break;
        case ONCE:
            atomic_store(&init_release, round_no + 1);
            break;
        case KINDS:
            break;
    }
}

static void run_rounds(pthread_t w, enum kind k) {
    current = k;
    atomic_store(&serial_count, 0);
    atomic_store(&once_runs, 0);
    atomic_store(&init_entered, 0);
    atomic_store(&init_release, 0);
    atomic_store(&runner_go, 0);
    pthread_t runner = 0;
    if (k == ONCE) {
        for (int r = 0; r < ROUNDS; r++) onces[r] = (pthread_once_t)PTHREAD_ONCE_INIT;
        runner = compat_spawn(once_runner, NULL);
    }
    // A spinning waiter burns its CPU natively: fewer rounds keep the program fast on a loaded
    // host.
    const int rounds = k == SPIN ? ROUNDS / 4 : ROUNDS;
    for (int r = 0; r < rounds; r++) {
        round_no = r;
        predicate = 0;
        atomic_store(&announced, 0);
        take(k);
        const int before = atomic_load(&handled);
        CHECK_SYS(sem_post(&go));
        compat_wait_at_least(&announced, r + 1, kind_names[k]);
        for (int i = 0; i < r % 16; i++) sched_yield();  // vary where the signal lands
        CHECK_RC(pthread_kill(w, r % 2 ? SIGUSR1 : SIGUSR2), 0);
        compat_wait_at_least(&handled, before + 1,
                             kind_names[k]);  // the handler ran while it waits
        CHECK(!atomic_load(&wrong_thread), "%s: handler ran in another thread", kind_names[k]);
        release(k);
        compat_sem_wait_through_signals(&done);
        CHECK_EQ(atomic_load(&handled), before + 1);
    }
    total += rounds;
    if (k == BARRIER) CHECK_EQ(atomic_load(&serial_count), ROUNDS);
    if (k == ONCE) {
        compat_join(runner);
        CHECK_EQ(atomic_load(&once_runs), ROUNDS);
    }
}

int main(void) {
    compat_start("signal_during_wait");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    CHECK_SYS(sigaction(SIGUSR1, &sa, NULL));
    sa.sa_flags = 0;
    CHECK_SYS(sigaction(SIGUSR2, &sa, NULL));
    CHECK_SYS(sem_init(&go, 0, 0));
    CHECK_SYS(sem_init(&done, 0, 0));
    CHECK_RC(pthread_barrier_init(&barrier, NULL, 2), 0);
    CHECK_RC(pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE), 0);

    pthread_t w = compat_spawn(worker, NULL);
    expected = w;
    for (int k = 0; k < KINDS; k++) run_rounds(w, (enum kind)k);
    current = KINDS;
    CHECK_SYS(sem_post(&go));
    compat_join(w);
    CHECK_EQ(atomic_load(&handled), total);
    return compat_ok();
}
