// exec_mask: a new program starts with the signal mask of the thread that started it, and with
// the dispositions it ignores. Main blocks SIGUSR1 and ignores SIGINT; a second thread also
// blocks SIGUSR2. Each starts this program again ("child" argument), which reports in its exit
// status what it was given (1: SIGUSR1 blocked, 2: SIGUSR2 blocked, 4: SIGINT ignored), through:
// fork + execv, execl, execlp, execve, execvp; system() and popen() (through the shell);
// posix_spawn without attributes, with attributes that set no mask, and posix_spawnp with an
// explicit empty mask (nothing blocked). An exec that fails returns -1/ENOENT and the program goes
// on; system(NULL) finds a shell, and system() returns the command's status.
#include <spawn.h>
#include <sys/wait.h>

#include "../common/compat.h"

extern char** environ;

static char self_path[4096];

enum { USR1 = 1, USR2 = 2, INT_IGNORED = 4 };

static int child_main(void) {
    sigset_t cur;
    sigprocmask(SIG_BLOCK, NULL, &cur);
    struct sigaction sa;
    sigaction(SIGINT, NULL, &sa);
    return (sigismember(&cur, SIGUSR1) ? USR1 : 0) | (sigismember(&cur, SIGUSR2) ? USR2 : 0) |
           (sa.sa_handler == SIG_IGN ? INT_IGNORED : 0);
}

static int status_of(pid_t pid) {
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status), "child ended with status %#x", status);
    return WEXITSTATUS(status);
}

// Starts the child with exec form `form` after fork; returns what it reported.
static int via_fork(int form) {
    const pid_t pid = fork();
    CHECK_SYS(pid);
    if (pid == 0) {
        char* argv[] = {self_path, (char*)"child", NULL};
        switch (form) {
            case 0:
                execv(self_path, argv);
                break;
            case 1:
                execl(self_path, self_path, "child", (char*)NULL);
                break;
            case 2:
                execlp(self_path, self_path, "child", (char*)NULL);
                break;
            case 3:
                execve(self_path, argv, environ);
                break;
            default:
                execvp(self_path, argv);
                break;
        }
        _exit(127);
    }
    return status_of(pid);
}

static int via_spawn(int form) {
    char* argv[] = {self_path, (char*)"child", NULL};
    pid_t pid;
    posix_spawnattr_t attr;
    CHECK_RC(posix_spawnattr_init(&attr), 0);
    int rc;
    if (form == 0) {
        rc = posix_spawn(&pid, self_path, NULL, NULL, argv, environ);
    } else if (form == 1) {
        CHECK_RC(posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP), 0);
        rc = posix_spawn(&pid, self_path, NULL, &attr, argv, environ);
    } else {
        sigset_t none;
        sigemptyset(&none);
        CHECK_RC(posix_spawnattr_setsigmask(&attr, &none), 0);
        CHECK_RC(posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK), 0);
        rc = posix_spawnp(&pid, self_path, NULL, &attr, argv, environ);
    }
    CHECK_RC(rc, 0);
    CHECK_RC(posix_spawnattr_destroy(&attr), 0);
    return status_of(pid);
}

// system() and popen()/pclose() run "<this program> child" through the shell.
static int via_shell(int form) {
    char command[sizeof self_path + 24];
    snprintf(command, sizeof command, "exec '%s' child", self_path);  // no fork in the shell
    int status;
    if (form == 0) {
        status = system(command);
    } else {
        FILE* f = popen(command, "r");
        CHECK(f != NULL, "popen: %s", strerror(errno));
        status = pclose(f);
    }
    CHECK(status != -1 && WIFEXITED(status), "%s returned %#x", form == 0 ? "system" : "pclose",
          status);
    return WEXITSTATUS(status);
}

static void check_all(int expected, const char* who) {
    for (int form = 0; form < 5; form++) {
        const int got = via_fork(form);
        CHECK(got == expected, "%s, fork + exec form %d: the child reported %d, expected %d", who,
              form, got, expected);
    }
    for (int form = 0; form < 2; form++) {
        const int got = via_shell(form);
        CHECK(got == expected, "%s, %s: the child reported %d, expected %d", who,
              form == 0 ? "system" : "popen", got, expected);
    }
    for (int form = 0; form < 3; form++) {
        const int got = via_spawn(form);
        const int want = form == 2 ? (expected & INT_IGNORED) : expected;
        CHECK(got == want, "%s, posix_spawn form %d: the child reported %d, expected %d", who, form,
              got, want);
    }
}

static void* second_thread(void* arg) {
    (void)arg;
    sigset_t usr2;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    CHECK_RC(pthread_sigmask(SIG_BLOCK, &usr2, NULL), 0);
    check_all(USR1 | USR2 | INT_IGNORED, "second thread");
    return NULL;
}

int main(int argc, char** argv) {
    if (argc == 2 && strcmp(argv[1], "child") == 0) return child_main();
    compat_start("exec_mask");
    const ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    CHECK(n > 0, "readlink /proc/self/exe: %s", strerror(errno));
    self_path[n] = '\0';
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    CHECK_RC(pthread_sigmask(SIG_BLOCK, &usr1, NULL), 0);
    CHECK(signal(SIGINT, SIG_IGN) != SIG_ERR, "signal(SIGINT, SIG_IGN)");
    CHECK(system(NULL) != 0, "system(NULL) says there is no shell");
    const int three = system("exit 3");
    CHECK(WIFEXITED(three) && WEXITSTATUS(three) == 3, "system(\"exit 3\") returned %#x", three);
    check_all(USR1 | INT_IGNORED, "main");
    compat_join(compat_spawn(second_thread, NULL));
    char* none[] = {(char*)"/nonexistent/arbrun-exec-mask", NULL};
    CHECK_ERRNO(execv(none[0], none), ENOENT);
    check_all(USR1 | INT_IGNORED, "main after a failed exec");
    return compat_ok();
}
