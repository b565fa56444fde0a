// signal_eintr: blocking calls that a signal handler interrupts, as glibc on Linux does it.
// sem_wait, waitpid and a pipe read fail with EINTR after a handler without SA_RESTART and go on
// after one with it (the handler runs while they wait);
// sem_timedwait and sem_clockwait, nanosleep, clock_nanosleep (relative: remaining time in rem;
// TIMER_ABSTIME), usleep, sleep (seconds left), pause and sigsuspend return EINTR whatever
// SA_RESTART says. The handler runs in the waiting thread (pthread_self).
//
// No sleeps as synchronisation: main keeps sending the signal (a handler that ran just before the
// call started interrupts nothing) until the worker's call has returned, so each round is correct
// whether a signal lands before or during the call. The long timeouts (20 s) only bound a
// failure. sigsuspend is also checked deterministically: the signal is made pending while blocked,
// then sigsuspend unblocks it.
#include <semaphore.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "../common/compat.h"
#include "../common/compat_wait.h"

#define ROUNDS 20

enum call {
    SEM_WAIT,
    WAITPID,
    READ_PIPE,
    SEM_TIMEDWAIT,
    SEM_CLOCKWAIT,
    NANOSLEEP,
    CLOCK_NANOSLEEP_REL,
    CLOCK_NANOSLEEP_ABS,
    USLEEP,
    SLEEP,
    PAUSE,
    SIGSUSPEND,
    CALLS
};
static const char* const call_names[CALLS] = {"sem_wait",
                                              "waitpid",
                                              "read",
                                              "sem_timedwait",
                                              "sem_clockwait",
                                              "nanosleep",
                                              "clock_nanosleep",
                                              "clock_nanosleep(TIMER_ABSTIME)",
                                              "usleep",
                                              "sleep",
                                              "pause",
                                              "sigsuspend"};

// Calls that SA_RESTART restarts (the others always fail with EINTR after a handler).
static int restartable(enum call c) {
    return c == SEM_WAIT || c == WAITPID || c == READ_PIPE;
}

static pthread_t worker_thread;
static atomic_int handled, wrong_thread;
static atomic_int announced, finished;  // rounds the worker started / completed
static volatile enum call current;
static volatile int restart_flag;  // this round's handler has SA_RESTART
static sem_t sem, go;
static pid_t child;        // WAITPID: a child that exits (status 3) once it reads a byte
static int child_pipe[2];  // main writes to [1] to let the child exit
static int data_pipe[2];   // READ_PIPE: the worker reads [0], main writes [1]

// What the worker's call returned in the last round.
static long result;
static int result_errno;
static struct timespec rem;

static void on_signal(int sig) {
    (void)sig;
    if (!pthread_equal(pthread_self(), worker_thread)) atomic_store(&wrong_thread, 1);
    atomic_fetch_add(&handled, 1);
}

static void set_handler(int restart) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = restart ? SA_RESTART : 0;
    CHECK_SYS(sigaction(SIGUSR1, &sa, NULL));
    restart_flag = restart;
}

// Runs this round's call once and records its outcome.
static void do_call(enum call c) {
    const struct timespec twenty = {COMPAT_LONG_MS / 1000, 0};
    struct timespec rt_deadline = compat_deadline_ms(CLOCK_REALTIME, COMPAT_LONG_MS);
    struct timespec mono_deadline = compat_deadline_ms(CLOCK_MONOTONIC, COMPAT_LONG_MS);
    rem.tv_sec = -1;
    rem.tv_nsec = -1;
    errno = 0;
    switch (c) {
        case SEM_WAIT:
            result = sem_wait(&sem);
            break;
        case WAITPID: {
            int status = 0;
            result = waitpid(child, &status, 0);
            if (result == child) result = WIFEXITED(status) ? WEXITSTATUS(status) : -2;
            break;
        }
        case READ_PIPE: {
            char c;
            result = read(data_pipe[0], &c, 1);
            break;
        }
        case SEM_TIMEDWAIT:
            result = sem_timedwait(&sem, &rt_deadline);
            break;
        case SEM_CLOCKWAIT:
            result = sem_clockwait(&sem, CLOCK_MONOTONIC, &mono_deadline);
            break;
        case NANOSLEEP:
            result = nanosleep(&twenty, &rem);
            break;
        case CLOCK_NANOSLEEP_REL:
            result = clock_nanosleep(CLOCK_MONOTONIC, 0, &twenty, &rem);
            break;
        case CLOCK_NANOSLEEP_ABS:
            result = clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &rt_deadline, &rem);
            break;
        case USLEEP:
            result = usleep(COMPAT_LONG_MS * 1000);  // 20 s: more than POSIX's 1 s, fine on Linux
            break;
        case SLEEP:
            result = sleep(COMPAT_LONG_MS / 1000);
            break;
        case PAUSE:
            result = pause();
            break;
        case SIGSUSPEND: {
            sigset_t none;
            sigemptyset(&none);
            result = sigsuspend(&none);
            break;
        }
        case CALLS:
            break;
    }
    result_errno = errno;
}

static void* worker(void* arg) {
    (void)arg;
    for (int round = 1;; round++) {
        while (sem_wait(&go) != 0) CHECK(errno == EINTR, "sem_wait(go): errno %d", errno);
        if (current == CALLS) return NULL;
        atomic_store(&announced, round);
        do_call(current);
        atomic_store(&finished, round);
    }
}

// Checks what an interrupted call returned.
static void check_interrupted(enum call c) {
    const char* n = call_names[c];
    // The kernel adds its timer slack (50 us by default) to a sleep, and reports the remaining
    // time from that: allow 10 ms above the request.
    const int64_t twenty_ns = COMPAT_LONG_MS * 1000000LL + 10000000LL;
    switch (c) {
        case CLOCK_NANOSLEEP_REL:
            CHECK(result == EINTR, "%s returned %ld, expected EINTR", n, result);
            CHECK(rem.tv_sec >= 0 && rem.tv_nsec >= 0 && rem.tv_nsec < 1000000000,
                  "%s: bad remaining time", n);
            CHECK(compat_ns_from_ts(&rem) > 0 && compat_ns_from_ts(&rem) <= twenty_ns,
                  "%s: remaining %lld ns outside (0, 20.01 s]", n,
                  (long long)compat_ns_from_ts(&rem));
            break;
        case CLOCK_NANOSLEEP_ABS:
            CHECK(result == EINTR, "%s returned %ld, expected EINTR", n, result);
            break;
        case SLEEP:
            CHECK(result > 0 && result <= COMPAT_LONG_MS / 1000, "%s returned %ld", n, result);
            break;
        case NANOSLEEP:
            CHECK(result == -1 && result_errno == EINTR, "%s returned %ld errno %d", n, result,
                  result_errno);
            CHECK(compat_ns_from_ts(&rem) > 0 && compat_ns_from_ts(&rem) <= twenty_ns &&
                      rem.tv_nsec < 1000000000,
                  "%s: remaining %lld ns outside (0, 20.01 s]", n,
                  (long long)compat_ns_from_ts(&rem));
            break;
        default:
            CHECK(result == -1 && result_errno == EINTR, "%s returned %ld errno %d", n, result,
                  result_errno);
            break;
    }
}

// A child that blocks until main writes a byte to child_pipe, then exits with status 3.
static void start_child(void) {
    CHECK_SYS(pipe(child_pipe));
    fflush(stdout);
    child = fork();
    CHECK_SYS(child);
    if (child == 0) {
        char c;
        _exit(read(child_pipe[0], &c, 1) == 1 ? 3 : 4);
    }
    close(child_pipe[0]);
}

// Lets the call the worker waits in complete: what the restarted call then returns.
static long complete_wait(enum call c) {
    char byte = 'x';
    switch (c) {
        case SEM_WAIT:
            CHECK_SYS(sem_post(&sem));
            return 0;
        case WAITPID:
            CHECK_EQ(write(child_pipe[1], &byte, 1), 1);
            return 3;
        case READ_PIPE:
            CHECK_EQ(write(data_pipe[1], &byte, 1), 1);
            return 1;
        default:
            return 0;
    }
}

static void run_round(enum call c, int restart, int round) {
    set_handler(restart);
    current = c;
    if (c == WAITPID) start_child();
    const int before = atomic_load(&handled);
    CHECK_SYS(sem_post(&go));
    compat_wait_at_least(&announced, round, call_names[c]);
    if (restartable(c) && restart) {
        // Restarted after each handler (which runs while the call waits): it only returns once
        // completed below.
        for (int i = 0; i < 3; i++) {
            CHECK_RC(pthread_kill(worker_thread, SIGUSR1), 0);
            compat_wait_at_least(&handled, before + i + 1, call_names[c]);
        }
        CHECK(atomic_load(&finished) < round, "%s returned after an SA_RESTART handler",
              call_names[c]);
        const long expected = complete_wait(c);
        compat_wait_at_least(&finished, round, call_names[c]);
        CHECK(result == expected, "%s with SA_RESTART returned %ld errno %d, expected %ld",
              call_names[c], result, result_errno, expected);
    } else {
        compat_signal_until(worker_thread, SIGUSR1, &finished, round, call_names[c]);
        check_interrupted(c);
        if (c == WAITPID) {  // let the child go and reap it here
            int status;
            complete_wait(c);
            CHECK_EQ(waitpid(child, &status, 0), child);
        }
    }
    if (c == WAITPID) close(child_pipe[1]);
    CHECK(atomic_load(&handled) > before, "%s: no handler ran", call_names[c]);
    CHECK(!atomic_load(&wrong_thread), "%s: handler ran in another thread", call_names[c]);
    int v;
    CHECK_SYS(sem_getvalue(&sem, &v));
    CHECK_EQ(v, 0);
}

// sigsuspend with the signal already pending: it runs the handler and returns EINTR at once, and
// the thread's mask is as before afterwards.
static atomic_int suspend_ready, suspend_sent;
static void* suspender(void* arg) {
    (void)arg;
    sigset_t usr1, none, now;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigemptyset(&none);
    CHECK_RC(pthread_sigmask(SIG_BLOCK, &usr1, NULL), 0);
    atomic_store(&suspend_ready, 1);
    compat_wait_at_least(&suspend_sent, 1, "suspend_sent");
    sigset_t pending;
    do {  // pthread_kill made it pending on this thread before returning
        CHECK_SYS(sigpending(&pending));
    } while (!sigismember(&pending, SIGUSR1) && (sched_yield(), 1));
    const int before = atomic_load(&handled);
    CHECK_ERRNO(sigsuspend(&none), EINTR);
    CHECK_EQ(atomic_load(&handled), before + 1);
    CHECK_RC(pthread_sigmask(SIG_BLOCK, NULL, &now), 0);
    CHECK(sigismember(&now, SIGUSR1), "sigsuspend did not restore the mask");
    return NULL;
}

int main(void) {
    compat_start("signal_eintr");
    CHECK_SYS(sem_init(&sem, 0, 0));
    CHECK_SYS(sem_init(&go, 0, 0));
    CHECK_SYS(pipe(data_pipe));
    set_handler(1);
    worker_thread = compat_spawn(worker, NULL);
    int round = 0;
    for (int c = 0; c < CALLS; c++) {
        for (int r = 0; r < ROUNDS; r++) run_round((enum call)c, r % 2, ++round);
    }
    current = CALLS;
    CHECK_SYS(sem_post(&go));
    compat_join(worker_thread);

    for (int restart = 0; restart < 2; restart++) {
        set_handler(restart);
        atomic_store(&suspend_ready, 0);
        atomic_store(&suspend_sent, 0);
        worker_thread = compat_spawn(suspender, NULL);
        compat_wait_at_least(&suspend_ready, 1, "suspend_ready");
        CHECK_RC(pthread_kill(worker_thread, SIGUSR1), 0);
        atomic_store(&suspend_sent, 1);
        compat_join(worker_thread);
    }
    return compat_ok();
}
