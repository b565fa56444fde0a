// How many CPUID instructions one process start executes, and what one costs here. CPUID always
// traps to the hypervisor in a virtual machine (microseconds each, against tens of nanoseconds on
// bare metal), and glibc's start-up asks it dozens of times (CPU features and, leaf by leaf, the
// cache sizes), so on a VM it can be most of what exec costs. Counts by single-stepping the
// command's first thread with ptrace from exec to exit (other threads are not counted), so run
// only short commands. NAME=VALUE words before the command are set in its environment only.
//
// Usage: cpuid_count CMD [ARGS...]    prints "instructions N cpuid N"
//        cpuid_count --cost            prints the cost of one CPUID (leaf 4) in microseconds
#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double nowUs(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cost(void) {
    enum { kRounds = 2000 };
    unsigned a, b, c, d;
    volatile unsigned sink = 0;  // keeps the loop
    const double t0 = nowUs();
    for (int i = 0; i < kRounds; ++i) {
        __cpuid_count(4, i & 3, a, b, c, d);
        sink += a ^ b ^ c ^ d;
    }
    printf("cpuid-us %.3f\n", (nowUs() - t0) / kRounds);
    return 0;
}

int main(int argc, char** argv) {
    if (argc == 2 && strcmp(argv[1], "--cost") == 0) return cost();
    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: cpuid_count [NAME=VALUE...] CMD [ARGS...] | cpuid_count --cost\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("cpuid_count: fork");
        return 1;
    }
    if (pid == 0) {
        char** cmd = argv + 1;
        while (cmd[0] && cmd[0][0] != '/' && strchr(cmd[0], '=')) putenv(*cmd++);
        const int null = open("/dev/null", O_RDWR);  // only the count is printed
        if (null >= 0) dup2(null, 1), dup2(null, 2);
        if (!cmd[0] || ptrace(PTRACE_TRACEME, 0, 0, 0) != 0) _exit(127);
        execvp(cmd[0], cmd);
        _exit(127);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status)) {  // stopped at exec
        fprintf(stderr, "cpuid_count: the command did not start\n");
        return 1;
    }
    long steps = 0, cpuids = 0;
    for (;;) {
        struct user_regs_struct regs;
        if (ptrace(PTRACE_GETREGS, pid, 0, &regs) == 0) {
            errno = 0;
            const long word = ptrace(PTRACE_PEEKTEXT, pid, (void*)regs.rip, 0);
            if (errno == 0 && (word & 0xffff) == 0xa20f) ++cpuids;  // 0F A2: cpuid
        }
        if (ptrace(PTRACE_SINGLESTEP, pid, 0, 0) != 0) break;
        if (waitpid(pid, &status, 0) != pid || WIFEXITED(status) || WIFSIGNALED(status)) break;
        ++steps;
    }
    printf("instructions %ld cpuid %ld\n", steps, cpuids);
    return 0;
}
