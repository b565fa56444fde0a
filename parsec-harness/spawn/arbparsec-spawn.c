// arbparsec-spawn: runs a program as the child of this small process and reports its resource use.
//
// Usage: arbparsec-spawn RESULT_FILE PROGRAM [ARGS...]
//
// The harness (Python) cannot measure a child's peak RSS itself: Linux carries the forking
// process's high-water mark across execve into ru_maxrss, so every program would weigh at least
// as much as the Python interpreter. Forked from this process instead, the program's ru_maxrss is
// its own (this process is well under a megabyte). On the program's exit, RESULT_FILE gets
//   status WAIT_STATUS
//   wall_s SECONDS      fork to exit
//   cpu_s SECONDS       user + system time of the program and the children it waited for
//   max_rss_kb KB
// and this process exits as the program did (its exit status, or 128 + signal number).
// SIGINT, SIGTERM and SIGHUP are passed on to the program. Exit 2: usage; 127: exec failed.
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile pid_t child = -1;

static void forward(int sig) {
    if (child > 0) kill(child, sig);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
    if (argc < 3) {
        fputs("usage: arbparsec-spawn RESULT_FILE PROGRAM [ARGS...]\n", stderr);
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    const double start = now();
    pid_t pid = fork();
    if (pid < 0) {
        perror("arbparsec-spawn: fork");
        return 127;
    }
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        execvp(argv[2], argv + 2);
        fprintf(stderr, "arbparsec-spawn: cannot run %s: %s\n", argv[2], strerror(errno));
        _exit(127);
    }
    child = pid;
    int status;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0) {
        if (errno != EINTR) {
            perror("arbparsec-spawn: wait4");
            return 127;
        }
    }
    const double wall = now() - start;
    FILE* f = fopen(argv[1], "w");
    if (f) {
        fprintf(f, "status %d\nwall_s %.6f\ncpu_s %.6f\nmax_rss_kb %ld\n", status, wall,
                (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
                    (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6,
                ru.ru_maxrss);
        fclose(f);
    }
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 127;
}
