// raw_call_signal_jump: a signal whose handler siglongjmps out of a blocking system call the
// program issues with its own `syscall` instruction (an open of a FIFO that no writer ever opens,
// which the kernel restarts under SA_RESTART). Main blocks SIGUSR1; the worker, the only thread
// that takes it, blocks in the raw open 20 times per source, and main sends the signal until the
// handler jumped out of each: to the process (kill), then to the worker (pthread_kill). Natively
// the handler runs in the middle of the call; under arbrun the call passes through the preload
// library as it is, and the handler must still run there (were it deferred until the call
// returns, the restarted open would never return).
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "../common/compat.h"
#include "../common/compat_wait.h"
#include "../common/raw_syscall.h"

#if defined(__x86_64__)

#define ROUNDS 20
#define SOURCES 2  // kill, then pthread_kill

static char fifo_path[PATH_MAX];
static sigjmp_buf env;
static volatile sig_atomic_t armed;  // env is valid: the next handler jumps (then disarms)
static atomic_int announced, left_call;

static void on_usr1(int sig) {
    (void)sig;
    if (!armed) return;  // a signal after the last jump
    armed = 0;
    siglongjmp(env, 1);
}

static void* worker(void* arg) {
    (void)arg;
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    CHECK_RC(pthread_sigmask(SIG_UNBLOCK, &usr1, NULL), 0);
    for (int r = 0; r < ROUNDS * SOURCES; r++) {
        if (sigsetjmp(env, 1) == 0) {
            armed = 1;
            atomic_store(&announced, r + 1);
            const long fd = raw6(SYS_openat, AT_FDCWD, (long)fifo_path, O_RDONLY, 0, 0, 0);
            COMPAT_FAIL("raw open of a FIFO without a writer returned %ld", fd);
        }
        atomic_store(&left_call, r + 1);
    }
    return NULL;
}

int main(void) {
    compat_start("raw_call_signal_jump");
    char dir[PATH_MAX - 8];
    compat_temp_template(dir, sizeof dir, "arbrun-raw-jump");
    CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
    snprintf(fifo_path, sizeof fifo_path, "%s/fifo", dir);
    CHECK_SYS(mkfifo(fifo_path, 0600));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;  // the kernel would restart the open: only the jump ends it
    sigemptyset(&sa.sa_mask);
    CHECK_SYS(sigaction(SIGUSR1, &sa, NULL));
    sigset_t usr1, old;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    CHECK_RC(pthread_sigmask(SIG_BLOCK, &usr1, &old), 0);  // the worker alone takes it
    const pthread_t t = compat_spawn(worker, NULL);
    for (int r = 0; r < ROUNDS * SOURCES; r++) {
        compat_wait_at_least(&announced, r + 1, "worker in the raw open");
        const int to_thread = r >= ROUNDS;
        char what[80];
        snprintf(what, sizeof what, "round %d (%s): the handler jumping out of the raw open", r,
                 to_thread ? "pthread_kill" : "kill");
        // A signal before the open also ends the round.
        compat_signal_until(to_thread ? t : 0, SIGUSR1, &left_call, r + 1, what);
    }
    compat_join(t);
    signal(SIGUSR1, SIG_IGN);  // a last signal may still be pending: ignoring it discards it
    CHECK_RC(pthread_sigmask(SIG_SETMASK, &old, NULL), 0);
    CHECK_SYS(unlink(fifo_path));
    CHECK_SYS(rmdir(dir));
    return compat_ok();
}

#else
int main(void) {
    compat_start("raw_call_signal_jump");
    printf("skip raw_call_signal_jump: the inline syscall helper is written for x86-64 only\n");
    return 77;
}
#endif
