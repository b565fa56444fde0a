// A minimal tracer, started as strace and gdb start one. Mode "traceme": fork; the child asks to be
// traced (PTRACE_TRACEME; mode "traceme-raw": through syscall(SYS_ptrace)) and stops itself; the
// parent sees the stop, lets the child go on and sees it exit. Mode "attach": fork a child that
// waits; the parent attaches to it (PTRACE_ATTACH), sees it stop, detaches and ends it. Exit
// status: 0 when the trace worked, 3 when the child's PTRACE_TRACEME failed with EPERM, 4 when
// PTRACE_ATTACH failed with EPERM, 1 on anything else. Every wait is bounded by alarm(20): a hang
// becomes exit status 142 (SIGALRM).
#define _GNU_SOURCE 1
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int traceme(int raw) {
    pid_t child = fork();
    if (child < 0) return 1;
    if (child == 0) {
        const long r = raw ? syscall(SYS_ptrace, PTRACE_TRACEME, 0L, 0L, 0L)
                           : ptrace(PTRACE_TRACEME, 0, NULL, NULL);
        if (r != 0) _exit(errno == EPERM ? 3 : 1);
        raise(SIGSTOP);
        _exit(0);
    }
    int status;
    if (waitpid(child, &status, 0) != child) return 1;
    if (WIFEXITED(status)) return WEXITSTATUS(status);  // the child's verdict (3: refused)
    if (!WIFSTOPPED(status) || WSTOPSIG(status) != SIGSTOP) return 1;
    if (ptrace(PTRACE_CONT, child, NULL, NULL) != 0) return 1;
    if (waitpid(child, &status, 0) != child) return 1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

static int attach(void) {
    int ready[2];
    if (pipe(ready) != 0) return 1;
    pid_t child = fork();
    if (child < 0) return 1;
    if (child == 0) {
        close(ready[0]);
        if (write(ready[1], "x", 1) != 1) _exit(1);
        for (;;) pause();
    }
    close(ready[1]);
    char c;
    if (read(ready[0], &c, 1) != 1) return 1;
    int result = 1;
    if (ptrace(PTRACE_ATTACH, child, NULL, NULL) != 0) {
        result = errno == EPERM ? 4 : 1;
    } else {
        int status;
        if (waitpid(child, &status, 0) == child && WIFSTOPPED(status) &&
            ptrace(PTRACE_DETACH, child, NULL, NULL) == 0) {
            result = 0;
        }
    }
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    return result;
}

int main(int argc, char** argv) {
    alarm(20);
    if (argc == 2 && strcmp(argv[1], "traceme") == 0) return traceme(0);
    if (argc == 2 && strcmp(argv[1], "traceme-raw") == 0) return traceme(1);
    if (argc == 2 && strcmp(argv[1], "attach") == 0) return attach();
    fprintf(stderr, "usage: trace_child traceme|traceme-raw|attach\n");
    return 2;
}
