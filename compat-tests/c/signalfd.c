// signalfd: signals the program blocks, read from a signalfd, as event loops (systemd, QEMU,
// servers that stop on SIGTERM) use it. Main blocks SIGUSR1, SIGUSR2 and SIGCHLD before any
// thread exists; then:
// - a non-blocking signalfd reads EAGAIN with nothing pending; kill() makes it readable (poll),
//   and a read returns one record with the sender's pid and uid; sigqueue's value comes through;
// - two pending signals: a one-record buffer reads them one at a time, readable in between, and a
//   two-record buffer reads both at once; once read, the descriptor is no longer readable;
// - a fork child reads its own signal from the descriptor it inherited, while the parent's
//   stays quiet; a child's exit reads as SIGCHLD with CLD_EXITED, its pid and its status;
// - epoll reports it; a thread blocked in read() returns with the signal, ROUNDS times, the
//   signal sent to the process or (pthread_kill) to the reading thread itself; two threads
//   blocked in read() on one descriptor race for RACE_ROUNDS signals, each read exactly once;
// - a new mask replaces the old; a dup2 copy reads the same signals; the raw system calls
//   (signalfd4, read, close) behave alike; a number closed and reused reads as its new file;
// - errors: bad flags, a descriptor that is no signalfd, a bad one, a buffer under one record.
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../common/compat.h"
#include "../common/compat_wait.h"
#include "../common/raw_syscall.h"

#define ROUNDS 200

static int readable_within(int fd, int ms) {
    struct pollfd p = {fd, POLLIN, 0};
    const int r = poll(&p, 1, ms);
    CHECK(r >= 0, "poll: %s", strerror(errno));
    return r == 1 && (p.revents & POLLIN);
}

// The process-directed signals sent so far arrive (pending) before the test looks: natively at
// once, under arbrun once the kernel has run the wrapper on some carrier.
static void wait_pending(int sig) {
    const int64_t end = compat_now_ns(CLOCK_MONOTONIC) + COMPAT_LONG_MS * 1000000LL;
    for (;;) {
        sigset_t p;
        CHECK_SYS(sigpending(&p));
        if (sigismember(&p, sig)) return;
        if (compat_now_ns(CLOCK_MONOTONIC) > end)
            COMPAT_FAIL("signal %d never became pending", sig);
        sched_yield();
    }
}

static struct signalfd_siginfo read_one(int fd, const char* what) {
    struct signalfd_siginfo si;
    const ssize_t n = read(fd, &si, sizeof si);
    CHECK(n == (ssize_t)sizeof si, "%s: read returned %zd (%s)", what, n, strerror(errno));
    return si;
}

static sigset_t set_of(int a, int b) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, a);
    if (b) sigaddset(&s, b);
    return s;
}

static int blocking_fd;
static atomic_int announced, done_rounds;

// Reads one record per round from a blocking signalfd, announcing each wait first.
static void* reader(void* arg) {
    (void)arg;
    for (int r = 0; r < ROUNDS; r++) {
        atomic_store(&announced, r + 1);
        const struct signalfd_siginfo si = read_one(blocking_fd, "blocking read");
        CHECK(si.ssi_signo == SIGUSR1, "round %d: blocking read got signal %u", r, si.ssi_signo);
        atomic_store(&done_rounds, r + 1);
    }
    return NULL;
}

#define RACE_ROUNDS 300
static int race_fd;
static atomic_int race_taken, race_exited;

// Reads SIGUSR2 records from the shared descriptor until RACE_ROUNDS were read in all.
static void* racer(void* arg) {
    (void)arg;
    for (;;) {
        const struct signalfd_siginfo si = read_one(race_fd, "racing read");
        CHECK(si.ssi_signo == SIGUSR2, "racing read got signal %u", si.ssi_signo);
        if (atomic_fetch_add(&race_taken, 1) + 1 >= RACE_ROUNDS) break;
    }
    atomic_fetch_add(&race_exited, 1);
    return NULL;
}

int main(void) {
    compat_start("signalfd");
    sigset_t blocked = set_of(SIGUSR1, SIGUSR2);
    sigaddset(&blocked, SIGCHLD);
    CHECK_RC(pthread_sigmask(SIG_BLOCK, &blocked, NULL), 0);

    // Errors.
    sigset_t usr = set_of(SIGUSR1, SIGUSR2);
    CHECK_ERRNO(signalfd(-1, &usr, 0x1234), EINVAL);
    int pipefd[2];
    CHECK_SYS(pipe(pipefd));
    CHECK_ERRNO(signalfd(pipefd[0], &usr, 0), EINVAL);
    CHECK_ERRNO(signalfd(4000, &usr, 0), EBADF);

    // Nothing pending, then kill and sigqueue.
    const int fd = signalfd(-1, &usr, SFD_NONBLOCK | SFD_CLOEXEC);
    CHECK(fd >= 0, "signalfd: %s", strerror(errno));
    CHECK(fcntl(fd, F_GETFD) == FD_CLOEXEC, "SFD_CLOEXEC not set");
    struct signalfd_siginfo si;
    CHECK_ERRNO(read(fd, &si, sizeof si), EAGAIN);
    CHECK_ERRNO(read(fd, &si, sizeof si - 1), EINVAL);
    CHECK(!readable_within(fd, 0), "readable with nothing pending");
    CHECK_SYS(kill(getpid(), SIGUSR1));
    CHECK(readable_within(fd, COMPAT_LONG_MS), "not readable after kill");
    si = read_one(fd, "after kill");
    CHECK_EQ(si.ssi_signo, SIGUSR1);
    CHECK_EQ(si.ssi_code, SI_USER);
    CHECK_EQ(si.ssi_pid, getpid());
    CHECK_EQ(si.ssi_uid, getuid());
    CHECK_ERRNO(read(fd, &si, sizeof si), EAGAIN);
    CHECK(!readable_within(fd, 0), "still readable once read");
    union sigval v = {.sival_int = 42};
    CHECK_SYS(sigqueue(getpid(), SIGUSR2, v));
    wait_pending(SIGUSR2);
    si = read_one(fd, "after sigqueue");
    CHECK_EQ(si.ssi_signo, SIGUSR2);
    CHECK_EQ(si.ssi_code, SI_QUEUE);
    CHECK_EQ(si.ssi_int, 42);

    // Two pending: one at a time, then both at once.
    for (int pass = 0; pass < 2; pass++) {
        CHECK_SYS(kill(getpid(), SIGUSR1));
        CHECK_SYS(kill(getpid(), SIGUSR2));
        wait_pending(SIGUSR1);
        wait_pending(SIGUSR2);
        struct signalfd_siginfo two[2];
        if (pass == 0) {
            CHECK_EQ(read(fd, two, sizeof two[0]), sizeof two[0]);
            CHECK(readable_within(fd, 0), "not readable with one signal left");
            CHECK_EQ(read(fd, &two[1], sizeof two[1]), sizeof two[1]);
        } else {
            CHECK_EQ(read(fd, two, sizeof two), sizeof two);
        }
        CHECK(two[0].ssi_signo + two[1].ssi_signo == SIGUSR1 + SIGUSR2 &&
                  two[0].ssi_signo != two[1].ssi_signo,
              "pass %d: read signals %u and %u", pass, two[0].ssi_signo, two[1].ssi_signo);
        CHECK(!readable_within(fd, 0), "pass %d: still readable once both were read", pass);
    }

    // A fork child reads its own signal from the descriptor it inherited and leaves a second one
    // unread; the parent's stays quiet (natively each process's signalfd reports that process's
    // signals).
    const pid_t forked = fork();
    CHECK_SYS(forked);
    if (forked == 0) {
        if (kill(getpid(), SIGUSR1) != 0 || !readable_within(fd, COMPAT_LONG_MS)) _exit(1);
        struct signalfd_siginfo mine;
        if (read(fd, &mine, sizeof mine) != (ssize_t)sizeof mine) _exit(2);
        if (mine.ssi_signo != SIGUSR1 || mine.ssi_pid != (uint32_t)getpid()) _exit(3);
        // One more, left unread: it dies with this process.
        if (kill(getpid(), SIGUSR2) != 0 || !readable_within(fd, COMPAT_LONG_MS)) _exit(4);
        _exit(0);
    }
    int reader_status;
    CHECK_EQ(waitpid(forked, &reader_status, 0), forked);
    CHECK(WIFEXITED(reader_status) && WEXITSTATUS(reader_status) == 0,
          "the fork child's read from its signalfd failed (status %#x)", reader_status);
    CHECK(!readable_within(fd, 0), "the parent's signalfd is readable after the child's signal");
    CHECK_ERRNO(read(fd, &si, sizeof si), EAGAIN);
    sigset_t chld_only = set_of(SIGCHLD, 0);
    const struct timespec long_wait = {COMPAT_LONG_MS / 1000, 0};
    CHECK_EQ(sigtimedwait(&chld_only, NULL, &long_wait), SIGCHLD);  // that child's: taken here

    // A child's exit.
    sigset_t chld = set_of(SIGCHLD, 0);
    const int cfd = signalfd(-1, &chld, 0);
    CHECK(cfd >= 0, "signalfd(SIGCHLD): %s", strerror(errno));
    const pid_t child = fork();
    CHECK_SYS(child);
    if (child == 0) _exit(7);
    si = read_one(cfd, "SIGCHLD");
    CHECK_EQ(si.ssi_signo, SIGCHLD);
    CHECK_EQ(si.ssi_code, CLD_EXITED);
    CHECK_EQ(si.ssi_pid, child);
    CHECK_EQ(si.ssi_status, 7);
    int status;
    CHECK_EQ(waitpid(child, &status, 0), child);
    CHECK_SYS(close(cfd));

    // epoll.
    const int ep = epoll_create1(EPOLL_CLOEXEC);
    CHECK_SYS(ep);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    CHECK_SYS(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
    CHECK_SYS(kill(getpid(), SIGUSR2));
    struct epoll_event out;
    CHECK_EQ(epoll_wait(ep, &out, 1, COMPAT_LONG_MS), 1);
    CHECK_EQ(out.data.fd, fd);
    CHECK_EQ(read_one(fd, "after epoll").ssi_signo, SIGUSR2);
    CHECK_SYS(close(ep));

    // A thread blocked in read(): the signal to the process, then to the thread.
    sigset_t one = set_of(SIGUSR1, 0);
    blocking_fd = signalfd(-1, &one, 0);
    CHECK(blocking_fd >= 0, "signalfd (blocking): %s", strerror(errno));
    const pthread_t t = compat_spawn(reader, NULL);
    for (int r = 0; r < ROUNDS; r++) {
        compat_wait_at_least(&announced, r + 1, "reader waiting");
        if (r % 2 == 0) {
            CHECK_SYS(kill(getpid(), SIGUSR1));
        } else {
            CHECK_RC(pthread_kill(t, SIGUSR1), 0);
        }
        compat_wait_at_least(&done_rounds, r + 1, "reader got the signal");
    }
    compat_join(t);

    // Two readers racing for one descriptor: each signal is read once, by one of them.
    sigset_t two = set_of(SIGUSR2, 0);
    race_fd = signalfd(-1, &two, 0);
    CHECK(race_fd >= 0, "signalfd (race): %s", strerror(errno));
    const pthread_t racers[2] = {compat_spawn(racer, NULL), compat_spawn(racer, NULL)};
    for (int r = 0; r < RACE_ROUNDS; r++) {
        CHECK_SYS(kill(getpid(), SIGUSR2));
        compat_wait_at_least(&race_taken, r + 1, "a racer read the signal");
        CHECK_EQ(atomic_load(&race_taken), r + 1);
    }
    // The racer still reading gets one more, sees the count reached, and ends too.
    while (atomic_load(&race_exited) < 2) {
        const int taken = atomic_load(&race_taken);
        CHECK_SYS(kill(getpid(), SIGUSR2));
        while (atomic_load(&race_taken) == taken && atomic_load(&race_exited) < 2) sched_yield();
    }
    compat_join(racers[0]);
    compat_join(racers[1]);
    CHECK_SYS(close(race_fd));
    struct timespec zero = {0, 0};
    while (sigtimedwait(&two, NULL, &zero) == SIGUSR2) {  // one sent as the last racer ended
    }

    // A new mask; a dup2 copy; the raw calls.
    sigset_t only2 = set_of(SIGUSR2, 0);
    CHECK_EQ(signalfd(fd, &only2, 0), fd);
    CHECK_SYS(kill(getpid(), SIGUSR1));
    wait_pending(SIGUSR1);
    CHECK_ERRNO(read(fd, &si, sizeof si), EAGAIN);
    CHECK_EQ(sigwaitinfo(&one, NULL), SIGUSR1);  // it stayed pending: take it
    const int copy = 100;
    CHECK_EQ(dup2(fd, copy), copy);
    CHECK_SYS(kill(getpid(), SIGUSR2));
    CHECK(readable_within(copy, COMPAT_LONG_MS), "the dup2 copy is not readable");
    CHECK_EQ(read_one(copy, "the dup2 copy").ssi_signo, SIGUSR2);
    CHECK_SYS(close(copy));
#if defined(__x86_64__)
    uint64_t kmask;
    memcpy(&kmask, &one, sizeof kmask);
    const long rfd = raw6(SYS_signalfd4, -1, (long)&kmask, 8, SFD_NONBLOCK, 0, 0);
    CHECK(rfd >= 0, "raw signalfd4 returned %ld", rfd);
    CHECK_EQ(raw6(SYS_signalfd4, -1, (long)&kmask, 4, 0, 0, 0), -EINVAL);
    CHECK_EQ(raw6(SYS_read, rfd, (long)&si, sizeof si, 0, 0, 0), -EAGAIN);
    CHECK_SYS(kill(getpid(), SIGUSR1));
    CHECK(readable_within((int)rfd, COMPAT_LONG_MS), "the raw signalfd is not readable");
    CHECK_EQ(raw6(SYS_read, rfd, (long)&si, sizeof si, 0, 0, 0), sizeof si);
    CHECK_EQ(si.ssi_signo, SIGUSR1);
    CHECK_EQ(raw6(SYS_close, rfd, 0, 0, 0, 0, 0), 0);
#endif
    // A closed number reused by a pipe reads as the pipe (the lowest free number is the one
    // just closed).
    CHECK_SYS(close(fd));
    int np[2];
    CHECK_SYS(pipe(np));
    CHECK_EQ(np[0], fd);
    CHECK_EQ(write(np[1], "x", 1), 1);
    char c = 0;
    CHECK_EQ(read(np[0], &c, 1), 1);
    CHECK(c == 'x', "read %d from the pipe", c);
    CHECK_SYS(close(np[0]));
    CHECK_SYS(close(np[1]));
    CHECK_SYS(close(pipefd[0]));
    CHECK_SYS(close(pipefd[1]));
    CHECK_SYS(close(blocking_fd));
    return compat_ok();
}
