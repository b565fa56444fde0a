// raw_sleep_read: blocking system calls issued by the program's own `syscall` instruction (inline
// assembly, never libc), several threads at once, so that on a single core the writer must run
// while the reader waits: nanosleep (never early; EINVAL for a bad timespec), clock_nanosleep
// relative and with TIMER_ABSTIME on both clocks (never early), 2,000 one-byte round trips over
// pipes with raw read/write (each side blocks in read until the other writes), poll on a pipe
// woken by another thread's raw write and poll timing out (never early), and wait4 on a forked
// child that exits only after a thread of the parent writes to it while the parent waits. No
// signal is sent to the program, so no call may fail with EINTR (natively none does): a runtime's
// own signals (preemption, wake-ups) must not show through.
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../common/compat.h"
#include "../common/raw_syscall.h"

#if defined(__x86_64__)

// Raw sleeps: nanosleep never returns early, clock_nanosleep with TIMER_ABSTIME neither, on both
// clocks; bad arguments give -EINVAL. Runs beside the pipe threads.
static void* sleeper(void* arg) {
    (void)arg;
    for (int i = 0; i < 3; i++) {
        struct timespec req = {0, 10000000L + i * 5000000L};
        int64_t t0 = compat_now_ns(CLOCK_MONOTONIC);
        CHECK_EQ(raw6(SYS_nanosleep, (long)&req, 0, 0, 0, 0, 0), 0);
        int64_t took = compat_now_ns(CLOCK_MONOTONIC) - t0;
        CHECK(took >= compat_ns_from_ts(&req), "nanosleep %ld ns took only %lld ns", req.tv_nsec,
              (long long)took);
    }
    struct timespec bad = {0, 1000000000L};
    CHECK_EQ(raw6(SYS_nanosleep, (long)&bad, 0, 0, 0, 0, 0), -EINVAL);

    static const clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
    for (int c = 0; c < 2; c++) {
        struct timespec dl = compat_deadline_ms(clocks[c], 15);
        CHECK_EQ(raw6(SYS_clock_nanosleep, clocks[c], TIMER_ABSTIME, (long)&dl, 0, 0, 0), 0);
        CHECK(compat_reached(clocks[c], &dl), "clock_nanosleep(ABSTIME, clock %d) early",
              (int)clocks[c]);
        struct timespec rel = {0, 10000000L};
        int64_t t0 = compat_now_ns(clocks[c]);
        CHECK_EQ(raw6(SYS_clock_nanosleep, clocks[c], 0, (long)&rel, 0, 0, 0), 0);
        CHECK(compat_now_ns(clocks[c]) - t0 >= 10000000LL, "clock_nanosleep(rel) early");
        CHECK_EQ(raw6(SYS_clock_nanosleep, clocks[c], TIMER_ABSTIME, (long)&bad, 0, 0, 0), -EINVAL);
    }
    // A deadline already past returns at once.
    struct timespec past = compat_deadline_ms(CLOCK_MONOTONIC, -1000);
    CHECK_EQ(raw6(SYS_clock_nanosleep, CLOCK_MONOTONIC, TIMER_ABSTIME, (long)&past, 0, 0, 0), 0);
    return NULL;
}

// ---- pipe round trips: raw read blocks until the other thread's raw write -------------------

enum { TRIPS = 2000 };
static int ab[2], ba[2];  // main -> echo, echo -> main

static void raw_write_byte(int fd, unsigned char c) {
    CHECK_EQ(raw6(SYS_write, fd, (long)&c, 1, 0, 0, 0), 1);
}

static unsigned char raw_read_byte(int fd) {
    unsigned char c;
    long r = raw6(SYS_read, fd, (long)&c, 1, 0, 0, 0);
    CHECK(r == 1, "raw read returned %ld", r);
    return c;
}

static void* echo(void* arg) {
    (void)arg;
    for (int i = 0; i < TRIPS; i++)
        raw_write_byte(ba[1], (unsigned char)(raw_read_byte(ab[0]) + 1));
    return NULL;
}

static void* round_trips(void* arg) {
    (void)arg;
    pthread_t t = compat_spawn(echo, NULL);
    for (int i = 0; i < TRIPS; i++) {
        raw_write_byte(ab[1], (unsigned char)i);
        unsigned char in = raw_read_byte(ba[0]);
        CHECK(in == (unsigned char)(i + 1), "round trip %d: got %u", i, in);
    }
    compat_join(t);
    return NULL;
}

// ---- poll woken by another thread's write --------------------------------------------------

enum { POLLS = 200 };
static int pp[2];      // the polled pipe
static int poll_turn;  // the poller announces round i by setting 2i+1; the writer answers
static void* poll_writer(void* arg) {
    (void)arg;
    for (int i = 0; i < POLLS; i++) {
        while (__atomic_load_n(&poll_turn, __ATOMIC_ACQUIRE) != 2 * i + 1) {
            struct timespec nap = {0, 100000};  // raw nanosleep as the writer's own wait
            raw6(SYS_nanosleep, (long)&nap, 0, 0, 0, 0, 0);
        }
        raw_write_byte(pp[1], 'p');
    }
    return NULL;
}

static void* poller(void* arg) {
    (void)arg;
    // A timeout on an empty pipe: 0 ready, never early.
    struct pollfd pfd = {.fd = pp[0], .events = POLLIN};
    int64_t t0 = compat_now_ns(CLOCK_MONOTONIC);
    CHECK_EQ(raw6(SYS_poll, (long)&pfd, 1, 15, 0, 0, 0), 0);
    CHECK(compat_now_ns(CLOCK_MONOTONIC) - t0 >= 15000000LL, "poll timed out early");

    pthread_t t = compat_spawn(poll_writer, NULL);
    for (int i = 0; i < POLLS; i++) {
        __atomic_store_n(&poll_turn, 2 * i + 1, __ATOMIC_RELEASE);
        pfd.revents = 0;
        long r = raw6(SYS_poll, (long)&pfd, 1, COMPAT_LONG_MS, 0, 0, 0);
        CHECK(r == 1 && (pfd.revents & POLLIN), "poll returned %ld revents %#x", r, pfd.revents);
        CHECK_EQ(raw_read_byte(pp[0]), 'p');
    }
    compat_join(t);
    return NULL;
}

// ---- wait4 on a child that needs a thread of the waiting parent ------------------------------

static int to_child[2];
static int parent_waiting;  // set by main just before wait4

static void* child_feeder(void* arg) {
    (void)arg;
    while (!__atomic_load_n(&parent_waiting, __ATOMIC_ACQUIRE)) {
        struct timespec nap = {0, 200000};
        raw6(SYS_nanosleep, (long)&nap, 0, 0, 0, 0, 0);
    }
    raw_write_byte(to_child[1], 'x');
    return NULL;
}

static void wait_child(void) {
    CHECK_SYS(pipe(to_child));
    pid_t pid = fork();
    CHECK_SYS(pid);
    if (pid == 0) {
        // Child: only raw calls and _exit. Exits with 7 once the parent's thread wrote.
        unsigned char c = 0;
        long r = raw6(SYS_read, to_child[0], (long)&c, 1, 0, 0, 0);
        _exit(r == 1 && c == 'x' ? 7 : 1);
    }
    close(to_child[0]);
    pthread_t t = compat_spawn(child_feeder, NULL);
    // No child has exited yet (the child waits for the feeder, which waits for this flag).
    int status = 0;
    CHECK_EQ(raw6(SYS_wait4, pid, (long)&status, WNOHANG, 0, 0, 0), 0);
    __atomic_store_n(&parent_waiting, 1, __ATOMIC_RELEASE);
    CHECK_EQ(raw6(SYS_wait4, pid, (long)&status, 0, 0, 0, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 7, "child status %#x", status);
    CHECK_EQ(raw6(SYS_wait4, pid, (long)&status, 0, 0, 0, 0), -ECHILD);
    compat_join(t);
    close(to_child[1]);
}

int main(void) {
    compat_start("raw_sleep_read");
    CHECK_SYS(pipe(ab));
    CHECK_SYS(pipe(ba));
    CHECK_SYS(pipe(pp));
    pthread_t s = compat_spawn(sleeper, NULL);
    pthread_t rt = compat_spawn(round_trips, NULL);
    pthread_t pl = compat_spawn(poller, NULL);
    wait_child();  // while the others sleep, read and poll
    compat_join(s);
    compat_join(rt);
    compat_join(pl);
    return compat_ok();
}

#else
int main(void) {
    compat_start("raw_sleep_read");
    printf("skip raw_sleep_read: the inline syscall helper is written for x86-64 only\n");
    return 77;
}
#endif
