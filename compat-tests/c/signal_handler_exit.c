// signal_handler_exit: signal handlers that do not return, run in a thread that waits or computes.
// - pthread_exit from the handler: the joiner gets the value, the thread's cleanup handler runs,
//   a mutex it was waiting for is not held by it afterwards, while unwinding out of
//   pthread_cond_wait re-takes the condvar's mutex (as glibc does, like cancellation);
// - siglongjmp (pthread_kill, kill, a periodic POSIX timer) to a sigsetjmp(env, 1) point, out of
// pthread_mutex_lock, pthread_cond_wait,
//   sem_wait and a computing loop: the mask saved there is restored (the same signal arrives
//   again in the next round), and a cond_wait's mutex is held again after the jump (glibc's
//   siglongjmp runs the cleanup that cond_wait registered, as pthread_exit does); with
//   sigsetjmp(env, 0) the signal stays blocked after the jump, as the handler left it;
// - _exit from the handler of a thread-directed and of a process-directed signal (in a forked
//   child, whose exit status the parent checks).
// Main sends the signal until the worker reports that the handler left (correct whether a signal
// lands before or during the wait: a handler that ran before the wait jumped out of it).
#include <semaphore.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "../common/compat.h"
#include "../common/compat_wait.h"

#define ROUNDS 20

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cond_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static sem_t sem;
static atomic_int announced, left_wait, cleanups, handled;
static atomic_int stop_computing;
static pthread_t worker_thread;
static atomic_int wrong_thread;

enum wait_kind { W_MUTEX, W_COND, W_SEM, W_COMPUTE, WAITS };
static const char* const wait_names[WAITS] = {"pthread_mutex_lock", "pthread_cond_wait", "sem_wait",
                                              "computing"};

// Waits until the worker announced `round`; for a cond_wait, until it is inside the wait.
static void wait_inside(enum wait_kind k, int round) {
    compat_wait_at_least(&announced, round, wait_names[k]);
    if (k == W_COND) {
        CHECK_RC(pthread_mutex_lock(&cond_mutex), 0);
        CHECK_RC(pthread_mutex_unlock(&cond_mutex), 0);
    }
}

// The waits the handler ends, announced as `round` first. Main holds `mutex` and posts nothing
// to `sem` meanwhile. The cond_wait is announced with its mutex held, so once main could take
// that mutex, the waiter is inside pthread_cond_wait (wait_inside).
static void blocking_wait(enum wait_kind k, int round) {
    if (k != W_COND) atomic_store(&announced, round);
    switch (k) {
        case W_MUTEX:
            pthread_mutex_lock(&mutex);
            COMPAT_FAIL("pthread_mutex_lock returned while main holds the mutex");
        case W_COND:
            CHECK_RC(pthread_mutex_lock(&cond_mutex), 0);
            atomic_store(&announced, round);
            for (;;) pthread_cond_wait(&cond, &cond_mutex);  // nobody signals it
        case W_SEM:
            for (;;) sem_wait(&sem);
        case W_COMPUTE:
            while (!atomic_load_explicit(&stop_computing, memory_order_relaxed)) {
            }
            COMPAT_FAIL("compute loop stopped without a jump");
        case WAITS:
            break;
    }
}

// ---- pthread_exit from a handler.
static void on_exit_signal(int sig) {
    (void)sig;
    if (!pthread_equal(pthread_self(), worker_thread)) atomic_store(&wrong_thread, 1);
    atomic_fetch_add(&handled, 1);
    pthread_exit((void*)(intptr_t)42);
}

static void count_cleanup(void* arg) {
    (void)arg;
    atomic_fetch_add(&cleanups, 1);
}

static void* exiting_worker(void* arg) {
    const enum wait_kind k = (enum wait_kind)(intptr_t)arg;
    pthread_cleanup_push(count_cleanup, NULL);
    blocking_wait(k, 1);
    pthread_cleanup_pop(0);
    return NULL;
}

static void check_pthread_exit(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_exit_signal;
    sigemptyset(&sa.sa_mask);
    CHECK_SYS(sigaction(SIGUSR1, &sa, NULL));
    for (int k = 0; k < WAITS; k++) {
        for (int r = 0; r < ROUNDS / 2; r++) {
            atomic_store(&announced, 0);
            atomic_store(&cleanups, 0);
            CHECK_RC(pthread_mutex_lock(&mutex), 0);
            pthread_t t;
            CHECK_RC(pthread_create(&t, NULL, exiting_worker, (void*)(intptr_t)k), 0);
            worker_thread = t;
            wait_inside((enum wait_kind)k, 1);
            CHECK_RC(pthread_kill(t, SIGUSR1), 0);  // one is enough: it exits wherever it is
            void* value = NULL;
            CHECK_RC(pthread_join(t, &value), 0);
            CHECK(value == (void*)(intptr_t)42, "pthread_exit from a handler in %s: value %p",
                  wait_names[k], value);
            CHECK_EQ(atomic_load(&cleanups), 1);
            CHECK(!atomic_load(&wrong_thread), "handler ran in another thread");
            CHECK_RC(pthread_mutex_unlock(&mutex), 0);
            if (k == W_COND) {
                // Unwinding out of pthread_cond_wait re-takes its mutex (glibc's cleanup, as for
                // cancellation): the exited thread holds it. A normal mutex: main may unlock it.
                CHECK_RC(pthread_mutex_trylock(&cond_mutex), EBUSY);
                CHECK_RC(pthread_mutex_unlock(&cond_mutex), 0);
            }
            CHECK_RC(pthread_mutex_trylock(&cond_mutex), 0);
            CHECK_RC(pthread_mutex_unlock(&cond_mutex), 0);
        }
    }
}

// ---- siglongjmp from a handler.
static sigjmp_buf env;
static volatile int save_mask;
static volatile sig_atomic_t armed;  // env is valid: the next handler jumps (then disarms)

enum source { THREAD, PROCESS, TIMER };
static volatile int source;  // this check's enum source, for messages

static void on_jump_signal(int sig) {
    (void)sig;
    if (!pthread_equal(pthread_self(), worker_thread)) atomic_store(&wrong_thread, 1);
    atomic_fetch_add(&handled, 1);
    if (!armed) return;  // a timer's signal after the last round
    armed = 0;
    siglongjmp(env, 1);
}

static int usr1_blocked(void) {
    sigset_t now;
    CHECK_RC(pthread_sigmask(SIG_BLOCK, NULL, &now), 0);
    return sigismember(&now, SIGUSR1);
}

static void* jumping_worker(void* arg) {
    if (arg) {  // process-directed: only this thread takes it
        sigset_t usr1;
        sigemptyset(&usr1);
        sigaddset(&usr1, SIGUSR1);
        CHECK_RC(pthread_sigmask(SIG_UNBLOCK, &usr1, NULL), 0);
    }
    for (int r = 0; r < ROUNDS * WAITS; r++) {
        const enum wait_kind k = (enum wait_kind)(r % WAITS);
        atomic_store(&stop_computing, 0);
        if (sigsetjmp(env, save_mask) == 0) {
            armed = 1;
            blocking_wait(k, r + 1);
        }
        // Jumped out of the handler.
        if (save_mask) {
            CHECK(!usr1_blocked(), "siglongjmp did not restore the mask saved by sigsetjmp");
        } else {
            CHECK(usr1_blocked(), "siglongjmp to sigsetjmp(env, 0) unblocked the signal");
            sigset_t usr1;
            sigemptyset(&usr1);
            sigaddset(&usr1, SIGUSR1);
            CHECK_RC(pthread_sigmask(SIG_UNBLOCK, &usr1, NULL), 0);
        }
        if (k == W_COND) {
            // A jump out of the wait itself ran cond_wait's cleanup: the mutex is ours again. The
            // wait was announced with the mutex held, so a jump before the announcement came
            // before the wait (a timer's signal, or one sent last round and taken late): the mutex
            // may then be ours or free. A timer's signal may also land inside pthread_cond_wait
            // between its release of the mutex and its cleanup's registration, or between the
            // cleanup's removal and the re-lock: natively too (glibc's wait has both windows; seen
            // as round 77 of a native run beside busy loops), the mutex is then free. Either way,
            // it is free after this.
            const int held = pthread_mutex_trylock(&cond_mutex);
            if (atomic_load(&announced) > r && source != TIMER) {
                CHECK(held == EBUSY,
                      "round %d (source %d, sigsetjmp(env, %d)): the condvar's mutex was free "
                      "after the jump out of pthread_cond_wait (trylock returned %d)",
                      r, source, save_mask, held);
            } else {
                CHECK(held == EBUSY || held == 0, "trylock returned %d", held);
            }
            CHECK_RC(pthread_mutex_unlock(&cond_mutex), 0);
        }
        atomic_store(&left_wait, r + 1);
    }
    return NULL;
}

// A periodic POSIX timer's signals are the kernel's to deliver: it interrupts a computing thread's
// carrier directly, so that handler runs from the kernel's signal frame.
static void check_siglongjmp(int save, enum source src) {
    const int process_directed = src != THREAD;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_jump_signal;
    sigemptyset(&sa.sa_mask);
    CHECK_SYS(sigaction(SIGUSR1, &sa, NULL));
    save_mask = save;
    source = src;
    atomic_store(&announced, 0);
    atomic_store(&left_wait, 0);
    CHECK_RC(pthread_mutex_lock(&mutex), 0);
    sigset_t usr1, old;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    if (process_directed) CHECK_RC(pthread_sigmask(SIG_BLOCK, &usr1, &old), 0);
    worker_thread = compat_spawn(jumping_worker, process_directed ? &usr1 : NULL);
    timer_t timer;
    if (src == TIMER) {
        struct sigevent sev;
        memset(&sev, 0, sizeof sev);
        sev.sigev_notify = SIGEV_SIGNAL;
        sev.sigev_signo = SIGUSR1;
        CHECK_SYS(timer_create(CLOCK_MONOTONIC, &sev, &timer));
        struct itimerspec its;
        memset(&its, 0, sizeof its);
        its.it_value.tv_nsec = its.it_interval.tv_nsec = 200000;  // every 200 us
        CHECK_SYS(timer_settime(timer, 0, &its, NULL));
    }
    for (int r = 0; r < ROUNDS * WAITS; r++) {
        wait_inside((enum wait_kind)(r % WAITS), r + 1);
        compat_signal_until(src == THREAD ? worker_thread : 0, src == TIMER ? 0 : SIGUSR1,
                            &left_wait, r + 1, wait_names[r % WAITS]);
    }
    if (src == TIMER) CHECK_SYS(timer_delete(timer));
    compat_join(worker_thread);
    CHECK(!atomic_load(&wrong_thread), "handler ran in another thread");
    if (process_directed) {  // a last signal may still be pending: ignoring it discards it
        signal(SIGUSR1, SIG_IGN);
        CHECK_RC(pthread_sigmask(SIG_SETMASK, &old, NULL), 0);
    }
    CHECK_RC(pthread_mutex_unlock(&mutex), 0);
}

// ---- _exit from a handler, in a child process.
static void on_exit_now(int sig) {
    _exit(sig == SIGUSR1 ? 7 : 9);
}

static void* blocked_forever(void* arg) {
    sigset_t* unblock = (sigset_t*)arg;
    if (unblock) CHECK_RC(pthread_sigmask(SIG_UNBLOCK, unblock, NULL), 0);
    blocking_wait(W_MUTEX, 1);
    return NULL;
}

static void check_exit_in_child(int process_directed) {
    fflush(stdout);
    const pid_t pid = fork();
    CHECK_SYS(pid);
    if (pid == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_exit_now;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGUSR1, &sa, NULL);
        sigaction(SIGUSR2, &sa, NULL);
        atomic_store(&announced, 0);
        pthread_mutex_lock(&mutex);  // the child's copy, held by its main thread
        sigset_t usr2;
        sigemptyset(&usr2);
        sigaddset(&usr2, SIGUSR2);
        if (process_directed) pthread_sigmask(SIG_BLOCK, &usr2, NULL);
        pthread_t t = compat_spawn(blocked_forever, process_directed ? &usr2 : NULL);
        compat_wait_at_least(&announced, 1, "child thread");
        for (int i = 0; i < 20000; i++) {  // until the handler's _exit ends the process
            if (process_directed) {
                kill(getpid(), SIGUSR2);
            } else {
                pthread_kill(t, SIGUSR1);
            }
            for (int j = 0; j < 64; j++) sched_yield();
        }
        _exit(1);
    }
    int status;
    CHECK_SYS(waitpid(pid, &status, 0));
    CHECK(WIFEXITED(status), "child did not exit (status 0x%x)", status);
    CHECK_EQ(WEXITSTATUS(status), process_directed ? 9 : 7);
}

int main(void) {
    compat_start("signal_handler_exit");
    CHECK_SYS(sem_init(&sem, 0, 0));
    check_pthread_exit();
    for (int src = THREAD; src <= TIMER; src++) {
        check_siglongjmp(1, (enum source)src);
        check_siglongjmp(0, (enum source)src);
    }
    for (int r = 0; r < 5; r++) {
        check_exit_in_child(0);
        check_exit_in_child(1);
    }
    return compat_ok();
}
