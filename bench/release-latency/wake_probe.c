// wake_probe: what it costs here to wake a sleeping thread, the floor under every hand-over that
// wakes a thread on another CPU (a carrier granted a core, a create on another core, a release
// acknowledgement read by a sleeping arbiter). The waker, pinned to the first CPU this process may
// use, stamps CLOCK_MONOTONIC and FUTEX_WAKEs; the sleeper reads the clock when it runs. Each
// sample first waits --gap-us, so the sleeper's CPU has gone idle (in a VM a halted vCPU, woken
// through the hypervisor). Rows: the sleeper unpinned (the scheduler may run it on the waker's
// CPU), then pinned to each --cpu (default: the second and the last CPU allowed). Pins only its
// own two threads.
//
// Usage: wake_probe [--samples N] [--gap-us US] [--cpu C]...
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { kMaxCpus = 64 };

// The hand-off between the two threads. `word` is the futex: 1 = go (set by the waker before
// FUTEX_WAKE), 0 = sleeping or done; `stop` ends the sleeper. `sentNs` is written by the waker
// before `word` (release) and read by the sleeper after it (acquire); `latencyNs` and `done` go
// the other way.
struct Probe {
    _Atomic uint32_t word;
    _Atomic int stop;
    _Atomic int64_t sentNs;
    _Atomic int64_t latencyNs;
    _Atomic int done;
    int cpu;  // the sleeper's CPU, -1: unpinned
};

static int64_t nowNs(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int pinSelf(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set);
}

static void futexWait(_Atomic uint32_t* word) {
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
}

static void futexWake(_Atomic uint32_t* word) {
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

// The sleeper: waits on the futex; on each wake-up records how long after the stamp it ran.
static void* sleeper(void* arg) {
    struct Probe* p = arg;
    if (p->cpu >= 0 && pinSelf(p->cpu) != 0) {
        fprintf(stderr, "wake_probe: cannot pin to CPU %d: %s\n", p->cpu, strerror(errno));
        exit(1);
    }
    for (;;) {
        while (atomic_load_explicit(&p->word, memory_order_acquire) == 0) futexWait(&p->word);
        const int64_t ran = nowNs();
        atomic_store_explicit(&p->word, 0, memory_order_relaxed);
        if (atomic_load_explicit(&p->stop, memory_order_acquire)) return NULL;
        atomic_store_explicit(&p->latencyNs, ran - atomic_load(&p->sentNs), memory_order_relaxed);
        atomic_store_explicit(&p->done, 1, memory_order_release);
    }
}

static int compareInt64(const void* a, const void* b) {
    const int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
    return x < y ? -1 : x > y;
}

// One row: `samples` wake-ups of a sleeper pinned to `cpu` (-1: unpinned), `gapUs` apart.
static void measure(const char* label, int cpu, int samples, int gapUs) {
    struct Probe p = {.cpu = cpu};
    pthread_t thread;
    if (pthread_create(&thread, NULL, sleeper, &p) != 0) {
        fprintf(stderr, "wake_probe: cannot create the sleeper thread\n");
        exit(1);
    }
    int64_t* v = malloc(sizeof(int64_t) * (size_t)samples);
    if (!v) exit(1);
    for (int i = 0; i < samples; i++) {
        usleep((useconds_t)gapUs);
        atomic_store_explicit(&p.sentNs, nowNs(), memory_order_relaxed);
        atomic_store_explicit(&p.word, 1, memory_order_release);
        futexWake(&p.word);
        while (!atomic_load_explicit(&p.done, memory_order_acquire)) {
        }
        atomic_store_explicit(&p.done, 0, memory_order_relaxed);
        v[i] = atomic_load_explicit(&p.latencyNs, memory_order_relaxed);
    }
    atomic_store_explicit(&p.stop, 1, memory_order_release);
    atomic_store_explicit(&p.word, 1, memory_order_release);
    futexWake(&p.word);
    pthread_join(thread, NULL);
    qsort(v, (size_t)samples, sizeof v[0], compareInt64);
    printf("%-28s median %8.1f us  p90 %8.1f  min %8.1f\n", label, v[samples / 2] / 1e3,
           v[samples * 9 / 10] / 1e3, v[0] / 1e3);
    free(v);
}

static int usage(const char* why) {
    fprintf(stderr, "wake_probe: %s (usage: wake_probe [--samples N] [--gap-us US] [--cpu C]...)\n",
            why);
    return 2;
}

// A whole number in [lo, hi], or -1.
static long parseNumber(const char* s, long lo, long hi) {
    char* end = NULL;
    errno = 0;
    long n = strtol(s, &end, 10);
    if (errno || end == s || *end || n < lo || n > hi) return -1;
    return n;
}

int main(int argc, char** argv) {
    int samples = 2000, gapUs = 300, ncpu = 0, cpus[kMaxCpus];
    for (int i = 1; i < argc; i++) {
        const char* k = argv[i];
        if (!strcmp(k, "-h") || !strcmp(k, "--help")) {
            puts(
                "usage: wake_probe [--samples N] [--gap-us US] [--cpu C]...\n"
                "Median, p90 and minimum time from a FUTEX_WAKE to the woken thread running:\n"
                "unpinned, then pinned to each CPU C (default: the second and the last allowed).\n"
                "  --samples N   wake-ups per row (10..1000000, default 2000)\n"
                "  --gap-us US   pause before each, so the CPU goes idle (0..100000, default 300)");
            return 0;
        }
        if (i + 1 >= argc) return usage("an option without its value");
        long n;
        if (!strcmp(k, "--samples")) {
            if ((n = parseNumber(argv[++i], 10, 1000000)) < 0)
                return usage("--samples takes a whole number from 10 to 1000000");
            samples = (int)n;
        } else if (!strcmp(k, "--gap-us")) {
            if ((n = parseNumber(argv[++i], 0, 100000)) < 0)
                return usage("--gap-us takes microseconds from 0 to 100000");
            gapUs = (int)n;
        } else if (!strcmp(k, "--cpu")) {
            if ((n = parseNumber(argv[++i], 0, CPU_SETSIZE - 1)) < 0 || ncpu == kMaxCpus)
                return usage("--cpu takes a CPU number (at most 64 of them)");
            cpus[ncpu++] = (int)n;
        } else {
            return usage("unknown option");
        }
    }
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return usage("cannot read affinity");
    int first = -1, second = -1, last = -1;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &allowed)) continue;
        if (first < 0) {
            first = c;
        } else if (second < 0) {
            second = c;
        }
        last = c;
    }
    for (int i = 0; i < ncpu; i++) {
        if (!CPU_ISSET(cpus[i], &allowed) || cpus[i] == first) {
            fprintf(stderr,
                    "wake_probe: CPU %d is not one this process may use besides the waker's %d\n",
                    cpus[i], first);
            return 2;
        }
    }
    if (ncpu == 0 && second >= 0) {
        cpus[ncpu++] = second;
        if (last != second) cpus[ncpu++] = last;
    }
    if (pinSelf(first) != 0) return usage("cannot pin the waker");
    printf("waker on CPU %d, %d wake-ups per row, %d us apart\n", first, samples, gapUs);
    measure("sleeper unpinned", -1, samples, gapUs);
    for (int i = 0; i < ncpu; i++) {
        char label[48];
        snprintf(label, sizeof label, "sleeper pinned to CPU %d", cpus[i]);
        measure(label, cpus[i], samples, gapUs);
    }
    if (ncpu == 0) printf("(one CPU allowed: no cross-CPU wake-up to measure)\n");
    return 0;
}
