// signal_queue: signals another process sends faster than this one takes them, as a log shipper,
// a supervisor or stress-ng's sigfd stressor sends them.
// - Real-time signals queue (POSIX): 2,000 sigqueue()s of SIGRTMIN with values 0..1999, from a
//   child, while every thread blocks the signal, are taken back by sigwaitinfo one by one, in the
//   order sent, each with its value, its sender and SI_QUEUE, and then no more.
// - A flood does not starve the receiver: a child sigqueue()s SIGRTMIN+1 as fast as it can until
//   told to stop, while the receiver blocks it and does its own work (condition-variable handoffs
//   between two threads, pipe round trips to the child). With RLIMIT_SIGPENDING lowered, the
//   kernel turns the sender away with EAGAIN once that many are queued (counting every signal
//   pending for this user); none is lost: the receiver then takes exactly what the sender was told
//   was queued, values consecutive from 0.
// - A flood of a standard signal (SIGUSR1 by kill()) does not starve the receiver either, and
//   what stays pending is one instance (standard signals do not queue).
// - Real-time signals the program handles run the handler once per instance (count and sum of
//   the values).
// The children send to their parent only; every wait is bounded (alarm(30) and the deadlines).
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "../common/compat.h"

enum { QUEUED = 2000, WORK_ROUNDS = 300, HANDLED = 2000, PENDING_LIMIT = 1024 };

static sigset_t only(int sig) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    return s;
}

// Takes one `sig` (waiting up to COMPAT_LONG_MS), or fails.
static int take_one(int sig, siginfo_t* info, const char* what) {
    sigset_t s = only(sig);
    struct timespec limit = {COMPAT_LONG_MS / 1000, 0};
    int r = sigtimedwait(&s, info, &limit);
    CHECK(r == sig, "%s: sigtimedwait returned %d (errno %d)", what, r, errno);
    return r;
}

// Nothing more of `sig` is pending.
static void check_none_left(int sig, const char* what) {
    sigset_t s = only(sig);
    struct timespec zero = {0, 0};
    siginfo_t info;
    errno = 0;
    const int r = sigtimedwait(&s, &info, &zero);
    CHECK(r == -1 && errno == EAGAIN, "%s: sigtimedwait returned %d (errno %d), expected EAGAIN",
          what, r, errno);
}

// ---- 1. real-time signals queue, in order, with their values --------------------------------

// Forks a child that sigqueue()s `sig` to this process `count` times, with values 0..count-1 (a
// send the kernel turns away with EAGAIN is tried again), and exits 0.
static pid_t start_sender(int sig, int count) {
    const pid_t parent = getpid();
    pid_t child = fork();
    CHECK_SYS(child);
    if (child) return child;
    for (int i = 0; i < count; i++) {
        union sigval v = {.sival_int = i};
        while (sigqueue(parent, sig, v) != 0) {
            if (errno != EAGAIN) _exit(2);
            sched_yield();
        }
    }
    _exit(0);
}

static void queue_in_order(void) {
    pid_t child = start_sender(SIGRTMIN, QUEUED);
    int status;
    CHECK_SYS(waitpid(child, &status, 0));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "sender ended with status %#x", status);
    for (int i = 0; i < QUEUED; i++) {
        siginfo_t info;
        take_one(SIGRTMIN, &info, "queued");
        CHECK(info.si_value.sival_int == i, "instance %d carried value %d", i,
              info.si_value.sival_int);
        CHECK_EQ(info.si_code, SI_QUEUE);
        CHECK_EQ(info.si_pid, child);
    }
    check_none_left(SIGRTMIN, "queued");
}

// ---- 2 and 3. floods do not starve the receiver ------------------------------------------------

// Two threads hand a token back and forth WORK_ROUNDS times: the receiver's own work.
static pthread_mutex_t work_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cond = PTHREAD_COND_INITIALIZER;
static int work_turn;  // round * 2 + side whose turn it is

static void* work_side(void* arg) {
    int side = (int)(intptr_t)arg;
    for (int r = 0; r < WORK_ROUNDS; r++) {
        pthread_mutex_lock(&work_lock);
        while (work_turn != r * 2 + side) pthread_cond_wait(&work_cond, &work_lock);
        work_turn++;
        pthread_cond_broadcast(&work_cond);
        pthread_mutex_unlock(&work_lock);
    }
    return NULL;
}

static void do_work(void) {
    work_turn = 0;
    pthread_t a = compat_spawn(work_side, (void*)0);
    pthread_t b = compat_spawn(work_side, (void*)1);
    compat_join(a);
    compat_join(b);
    CHECK_EQ(work_turn, 2 * WORK_ROUNDS);
}

// The flooding child: sends `sig` (by sigqueue with consecutive values when `queue`, else by
// kill) until a byte arrives on `stop`, answers each byte of `ping` in between, and at the end
// writes how many sigqueue()s succeeded to `report`.
static void flood(pid_t parent, int sig, int queue, int ping, int pong, int report) {
    int sent = 0;
    for (;;) {
        for (int burst = 0; burst < 64; burst++) {
            if (queue) {
                union sigval v = {.sival_int = sent};
                if (sigqueue(parent, sig, v) == 0) {
                    sent++;
                } else if (errno != EAGAIN) {
                    _exit(2);
                }
            } else if (kill(parent, sig) != 0) {
                _exit(2);
            }
        }
        char c;
        ssize_t n = read(ping, &c, 1);
        if (n == 1 && c == 'q') break;
        if (n == 1 && write(pong, &c, 1) != 1) _exit(3);
        if (n == 0) _exit(4);
        if (n < 0 && errno != EAGAIN) _exit(5);
    }
    if (write(report, &sent, sizeof sent) != (ssize_t)sizeof sent) _exit(6);
    _exit(0);
}

// Runs the receiver's work and WORK_ROUNDS pipe round trips to the flooding child, stops it, and
// returns how many instances it reported queued.
static int work_under_flood(int sig, int queue) {
    int ping[2], pong[2], report[2];
    CHECK_SYS(pipe(ping));
    CHECK_SYS(pipe(pong));
    CHECK_SYS(pipe(report));
    const pid_t parent = getpid();
    pid_t child = fork();
    CHECK_SYS(child);
    if (child == 0) {
        fcntl(ping[0], F_SETFL, O_NONBLOCK);
        flood(parent, sig, queue, ping[0], pong[1], report[1]);
    }
    close(ping[0]);
    close(pong[1]);
    close(report[1]);
    do_work();
    for (int i = 0; i < WORK_ROUNDS; i++) {
        char c = 'p';
        CHECK_EQ(write(ping[1], &c, 1), 1);
        CHECK_EQ(read(pong[0], &c, 1), 1);
    }
    char q = 'q';
    CHECK_EQ(write(ping[1], &q, 1), 1);
    int sent = -1;
    CHECK_EQ(read(report[0], &sent, sizeof sent), (ssize_t)sizeof sent);
    int status;
    CHECK_SYS(waitpid(child, &status, 0));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "flooder ended with status %#x", status);
    close(ping[1]);
    close(pong[0]);
    close(report[0]);
    return sent;
}

static void rt_flood(void) {
    const int sig = SIGRTMIN + 1;
    struct rlimit saved, lowered;
    CHECK_SYS(getrlimit(RLIMIT_SIGPENDING, &saved));
    lowered = saved;
    lowered.rlim_cur = PENDING_LIMIT;
    CHECK_SYS(setrlimit(RLIMIT_SIGPENDING, &lowered));
    const int sent = work_under_flood(sig, 1);
    CHECK_SYS(setrlimit(RLIMIT_SIGPENDING, &saved));
    // The kernel turned the sender away at the limit, or before it: RLIMIT_SIGPENDING counts
    // every signal pending for this user, so a concurrent program of the same user (a test run
    // beside this one) may hold some, or all (arbrun may hold a few more in its record).
    CHECK(sent <= PENDING_LIMIT + 64, "%d queued with RLIMIT_SIGPENDING at %d", sent,
          PENDING_LIMIT);
    for (int i = 0; i < sent; i++) {
        siginfo_t info;
        take_one(sig, &info, "flood");
        CHECK(info.si_value.sival_int == i, "instance %d of the flood carried value %d", i,
              info.si_value.sival_int);
    }
    check_none_left(sig, "flood");
}

static void standard_flood(void) {
    work_under_flood(SIGUSR1, 0);
    siginfo_t info;
    take_one(SIGUSR1, &info, "standard flood");
    CHECK_EQ(info.si_code, SI_USER);
    check_none_left(SIGUSR1, "standard flood");
}

// ---- 4. a handled real-time signal runs its handler once per instance ------------------------

static atomic_int handled;
static atomic_llong handled_sum;

static void on_rt(int sig, siginfo_t* info, void* ctx) {
    (void)sig;
    (void)ctx;
    atomic_fetch_add(&handled_sum, info->si_value.sival_int);
    atomic_fetch_add(&handled, 1);
}

static void handled_instances(void) {
    const int sig = SIGRTMIN + 2;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_rt;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    CHECK_SYS(sigaction(sig, &sa, NULL));
    pid_t child = start_sender(sig, HANDLED);
    sigset_t s = only(sig);
    CHECK_RC(pthread_sigmask(SIG_UNBLOCK, &s, NULL), 0);
    int status;
    CHECK_SYS(waitpid(child, &status, 0));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "sender ended with status %#x", status);
    // Every instance was queued before waitpid returned; the ones not handled yet are pending.
    int64_t give_up = compat_now_ns(CLOCK_MONOTONIC) + COMPAT_LONG_MS * 1000000LL;
    while (atomic_load(&handled) < HANDLED) {
        CHECK(compat_now_ns(CLOCK_MONOTONIC) < give_up, "only %d of %d handled",
              atomic_load(&handled), HANDLED);
        sched_yield();
    }
    CHECK_EQ(atomic_load(&handled), HANDLED);
    CHECK(atomic_load(&handled_sum) == (long long)HANDLED * (HANDLED - 1) / 2,
          "handled values sum to %lld", (long long)atomic_load(&handled_sum));
}

int main(void) {
    compat_start("signal_queue");
    struct rlimit lim;
    CHECK_SYS(getrlimit(RLIMIT_SIGPENDING, &lim));
    CHECK(lim.rlim_cur >= 4 * QUEUED && lim.rlim_max >= PENDING_LIMIT,
          "RLIMIT_SIGPENDING is too low for this test (%llu)", (unsigned long long)lim.rlim_cur);
    // Blocked before any thread exists: every thread blocks them.
    sigset_t blocked;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGRTMIN);
    sigaddset(&blocked, SIGRTMIN + 1);
    sigaddset(&blocked, SIGRTMIN + 2);
    sigaddset(&blocked, SIGUSR1);
    CHECK_RC(pthread_sigmask(SIG_BLOCK, &blocked, NULL), 0);
    queue_in_order();
    rt_flood();
    standard_flood();
    handled_instances();
    return compat_ok();
}
