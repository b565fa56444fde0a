// signal_blocked_no_eintr: a signal every thread blocks interrupts no system call, so calls that
// never see a handler never fail with EINTR, whether the program has a handler for the signal or
// leaves its default. Another process sends SIGUSR1 (handled, no SA_RESTART) and SIGUSR2
// (default disposition) again and again while this one waits in waitpid, in a pipe read and in
// wait4 issued by its own `syscall` instruction; each call must return its real result. The
// signals stay pending and are taken at the end with sigtimedwait: one of each, since standard
// signals do not queue.
//
// The sender is this program's own child: it sends to its parent only, SENDS times each, then
// (for the pipe round) writes one byte and exits.
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../common/compat.h"
#include "../common/raw_syscall.h"

enum { SENDS = 300 };

static atomic_int handled;  // SIGUSR1's handler must never run: the signal stays blocked

static void on_usr1(int sig) {
    (void)sig;
    atomic_fetch_add(&handled, 1);
}

// Forks the sender: SENDS rounds of SIGUSR1 and SIGUSR2 by kill, then a byte on
// `out` (if >= 0), then exit 0.
static pid_t start_sender(int out) {
    const pid_t parent = getpid();
    pid_t child = fork();
    CHECK_SYS(child);
    if (child) return child;
    for (int i = 0; i < SENDS; i++) {
        if (kill(parent, SIGUSR1) != 0) _exit(2);
        if (kill(parent, SIGUSR2) != 0) _exit(3);
    }
    if (out >= 0 && write(out, "x", 1) != 1) _exit(4);
    _exit(0);
}

static void check_exit(int status) {
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "sender ended with status %#x", status);
}

// Takes what a round left pending: one SIGUSR1 and one SIGUSR2, no more.
static void take_pending(void) {
    const int sigs[2] = {SIGUSR1, SIGUSR2};
    for (int i = 0; i < 2; i++) {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, sigs[i]);
        struct timespec zero = {0, 0};
        siginfo_t info;
        CHECK_EQ(sigtimedwait(&s, &info, &zero), sigs[i]);
        CHECK_ERRNO(sigtimedwait(&s, &info, &zero), EAGAIN);
    }
}

int main(void) {
    compat_start("signal_blocked_no_eintr");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;  // no SA_RESTART: were it delivered, the calls would fail
    CHECK_SYS(sigaction(SIGUSR1, &sa, NULL));
    sigset_t blocked;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGUSR1);
    sigaddset(&blocked, SIGUSR2);
    CHECK_RC(pthread_sigmask(SIG_BLOCK, &blocked, NULL), 0);

    // waitpid through libc.
    int status;
    pid_t child = start_sender(-1);
    CHECK_EQ(waitpid(child, &status, 0), child);
    check_exit(status);
    take_pending();

    // A pipe read through libc, answered only after the last signal.
    int p[2];
    CHECK_SYS(pipe(p));
    child = start_sender(p[1]);
    char c;
    CHECK_EQ(read(p[0], &c, 1), 1);
    CHECK_EQ(waitpid(child, &status, 0), child);
    check_exit(status);
    close(p[0]);
    close(p[1]);
    take_pending();

    // wait4 by the program's own system call.
    child = start_sender(-1);
#if defined(__x86_64__)
    CHECK_EQ(raw6(SYS_wait4, child, (long)&status, 0, 0, 0, 0), child);
#else
    CHECK_EQ(waitpid(child, &status, 0), child);
#endif
    check_exit(status);
    take_pending();

    CHECK_EQ(atomic_load(&handled), 0);
    return compat_ok();
}
