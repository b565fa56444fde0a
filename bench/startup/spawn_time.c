// Start-up timing: runs each of several commands ROUNDS times, interleaved (round r runs command
// 1, 2, ... once each, so a change in the machine's load affects every command alike), and prints
// per command the minimum, median, 10th and 90th percentile wall time from fork to the child's
// exit, and the median CPU time (user + system, the child's and its children's), in microseconds.
// On a loaded machine the minimum and the CPU time are the steadier figures. Output and errors of
// the commands go to /dev/null; a command that fails (exit status not 0) makes the whole run fail.
//
// A command may begin with NAME=VALUE words, as with env(1): they are set in the child only, with
// no exec of env in between (which would add a whole process start to what is measured).
//
// Usage: spawn_time ROUNDS LABEL [NAME=VALUE...] CMD [ARGS...] [::: LABEL ...]...
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kMaxCommands = 16 };

struct Command {
    const char* label;
    char** argv;
    double* us;
    double* cpuUs;
};

static double nowUs(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

// Runs argv once; its wall time in us (its CPU time in *cpuUs), or -1 if it could not run or did
// not exit with 0.
static double runOnce(char** argv, double* cpuUs) {
    const double t0 = nowUs();
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 1);
            dup2(null, 2);
        }
        while (argv[0] && argv[0][0] != '/' && strchr(argv[0], '=')) putenv(*argv++);
        if (argv[0]) execvp(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid) return -1;
    const double t1 = nowUs();
    *cpuUs = ru.ru_utime.tv_sec * 1e6 + ru.ru_utime.tv_usec + ru.ru_stime.tv_sec * 1e6 +
             ru.ru_stime.tv_usec;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? t1 - t0 : -1;
}

static int cmpDouble(const void* a, const void* b) {
    const double x = *(const double*)a, y = *(const double*)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: spawn_time ROUNDS LABEL CMD [ARGS...] [::: LABEL CMD...]...\n");
        return 2;
    }
    const int rounds = atoi(argv[1]);
    struct Command commands[kMaxCommands];
    int n = 0;
    for (int i = 2; i < argc && n < kMaxCommands;) {
        commands[n].label = argv[i++];
        commands[n].argv = &argv[i];
        while (i < argc && strcmp(argv[i], ":::") != 0) ++i;
        if (i < argc) argv[i++] = NULL;  // ends this command's argv
        commands[n].us = calloc((size_t)rounds, sizeof(double));
        commands[n].cpuUs = calloc((size_t)rounds, sizeof(double));
        ++n;
    }
    for (int r = 0; r < rounds; ++r) {
        for (int c = 0; c < n; ++c) {
            commands[c].us[r] = runOnce(commands[c].argv, &commands[c].cpuUs[r]);
            if (commands[c].us[r] < 0) {
                fprintf(stderr, "spawn_time: '%s' failed\n", commands[c].label);
                return 1;
            }
        }
    }
    for (int c = 0; c < n; ++c) {
        qsort(commands[c].us, (size_t)rounds, sizeof(double), cmpDouble);
        qsort(commands[c].cpuUs, (size_t)rounds, sizeof(double), cmpDouble);
        printf("%-18s median %7.0f us  min %7.0f  p10 %7.0f  p90 %8.0f  cpu-median %7.0f  (n=%d)\n",
               commands[c].label, commands[c].us[rounds / 2], commands[c].us[0],
               commands[c].us[rounds / 10], commands[c].us[rounds * 9 / 10],
               commands[c].cpuUs[rounds / 2], rounds);
    }
    return 0;
}
