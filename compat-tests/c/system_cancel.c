// system_cancel: system() is a cancellation point; a thread cancelled while its command runs has
// the command killed and reaped (glibc's behaviour), and the caller's SIGINT/SIGQUIT
// dispositions and mask come back. The command is `exec cat <fifo>`: main opens the FIFO for
// writing, which returns once cat has it open (the command runs), cancels the thread, joins it
// (PTHREAD_CANCELED), and then sees the FIFO's reader gone (POLLERR on the write end). Also:
// system() returns the command's exit status.
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../common/compat.h"

static char fifo[PATH_MAX];

static void* run_cat(void* arg) {
    (void)arg;
    char command[PATH_MAX + 32];
    snprintf(command, sizeof command, "exec cat '%s' > /dev/null", fifo);
    const int status = system(command);
    COMPAT_FAIL("system returned %#x: the thread was not cancelled", status);
    return NULL;
}

int main(void) {
    compat_start("system_cancel");
    char dir[PATH_MAX - 16];
    compat_temp_template(dir, sizeof dir, "system_cancel");
    CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    CHECK_SYS(mkfifo(fifo, 0600));

    const int status = system("exit 5");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 5, "system(\"exit 5\") returned %#x", status);

    const pthread_t t = compat_spawn(run_cat, NULL);
    const int w = open(fifo, O_WRONLY);  // returns once cat has opened it
    CHECK_SYS(w);
    CHECK_RC(pthread_cancel(t), 0);
    CHECK(compat_join(t) == PTHREAD_CANCELED, "the thread was not cancelled");
    struct pollfd p = {w, POLLOUT, 0};
    CHECK_EQ(poll(&p, 1, COMPAT_LONG_MS), 1);
    CHECK(p.revents & POLLERR, "the command still reads the FIFO (revents %#x)", p.revents);
    struct sigaction sa;
    CHECK_SYS(sigaction(SIGINT, NULL, &sa));
    CHECK(sa.sa_handler == SIG_DFL, "SIGINT's disposition was not given back");
    sigset_t cur;
    CHECK_RC(pthread_sigmask(SIG_BLOCK, NULL, &cur), 0);
    CHECK(!sigismember(&cur, SIGCHLD), "SIGCHLD stayed blocked");
    CHECK_SYS(close(w));
    CHECK_SYS(unlink(fifo));
    CHECK_SYS(rmdir(dir));
    return compat_ok();
}
