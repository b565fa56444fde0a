// Shared scaffolding of the builtin workloads: plain pthread programs (nothing of arbrun's) written
// in the threading patterns of PARSEC programs, each with a verifiable result.
//
// Every workload takes the same options:
//   --threads N     worker threads (default 2)
//   --size S        test | simsmall | simmedium | native (default simsmall)
//   --seconds X     batch mode: repeat the whole computation until X seconds have passed (at least
//                   once); every repetition must give the same checksum
// and prints, on success:
//   checksum HEX    a hash of the result: deterministic for a given --threads and --size
//   unit N T        batch mode: repetition N done at T (CLOCK_MONOTONIC seconds)
//   units N         repetitions completed (batch throughput)
//   ok NAME
// A failed self-check prints "FAIL NAME: ..." on stderr and exits 1; bad options exit 2.
#ifndef ARBPARSEC_WORKLOAD_H
#define ARBPARSEC_WORKLOAD_H

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    int threads;
    int size;  // 0 test, 1 simsmall, 2 simmedium, 3 native
    double seconds;
} WlOptions;

static const char* wl_name = "workload";

static void wl_fail(const char* fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void wl_fail(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL %s: ", wl_name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void wl_usage_error(const char* fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void wl_usage_error(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", wl_name);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr,
            " (usage: %s [--threads N] [--size test|simsmall|simmedium|native] "
            "[--seconds X])\n",
            wl_name);
    va_end(ap);
    exit(2);
}

static WlOptions wl_parse(int argc, char** argv, const char* name) {
    wl_name = name;
    WlOptions o = {2, 1, 0};
    for (int i = 1; i < argc; i++) {
        const char* a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            printf(
                "usage: %s [--threads N] [--size test|simsmall|simmedium|native] "
                "[--seconds X]\n",
                name);
            exit(0);
        }
        if (i + 1 >= argc) wl_usage_error("'%s' needs a value or is unknown", a);
        const char* v = argv[++i];
        char* end;
        if (strcmp(a, "--threads") == 0) {
            long n = strtol(v, &end, 10);
            if (*end || n < 1 || n > 1024) wl_usage_error("--threads: '%s' is not in 1..1024", v);
            o.threads = (int)n;
        } else if (strcmp(a, "--size") == 0) {
            static const char* sizes[] = {"test", "simsmall", "simmedium", "native"};
            o.size = -1;
            for (int s = 0; s < 4; s++)
                if (strcmp(v, sizes[s]) == 0) o.size = s;
            if (o.size < 0) wl_usage_error("--size: '%s' is not test|simsmall|simmedium|native", v);
        } else if (strcmp(a, "--seconds") == 0) {
            o.seconds = strtod(v, &end);
            if (*end || !(o.seconds >= 0 && o.seconds <= 1e6)) wl_usage_error("--seconds: '%s'", v);
        } else {
            wl_usage_error("unknown option '%s'", a);
        }
    }
    return o;
}

// Work scale of a size: test is tiny (CI), native a few seconds on one core.
static long wl_scale(const WlOptions* o) {
    static const long scale[] = {1, 8, 32, 128};
    return scale[o->size];
}

static double wl_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// FNV-1a over 64-bit words.
static inline uint64_t wl_hash(uint64_t h, uint64_t v) {
    for (int i = 0; i < 8; i++) {
        h ^= (v >> (8 * i)) & 0xff;
        h *= 0x100000001b3ull;
    }
    return h;
}
#define WL_HASH_INIT 0xcbf29ce484222325ull

// Doubles hashed after rounding to 1e-9 relative precision is not needed: every workload computes
// each value in a fixed order, so the bits are the same in every run; hash the bits.
static inline uint64_t wl_hash_double(uint64_t h, double d) {
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    return wl_hash(h, bits);
}

// splitmix64: a small deterministic generator for inputs.
static inline uint64_t wl_mix(uint64_t* s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline double wl_unit(uint64_t* s) {
    return (double)(wl_mix(s) >> 11) * (1.0 / 9007199254740992.0);
}

static void wl_check_rc(int rc, const char* what) {
    if (rc != 0) wl_fail("%s: %s", what, strerror(rc));
}

static inline pthread_t wl_spawn(void* (*fn)(void*), void* arg) {
    pthread_t t;
    wl_check_rc(pthread_create(&t, NULL, fn, arg), "pthread_create");
    return t;
}

static inline void wl_join(pthread_t t) {
    wl_check_rc(pthread_join(t, NULL), "pthread_join");
}

// Runs one repetition (returns its checksum) once, or until --seconds have passed; every
// repetition must agree with the first. Prints the checksum as soon as the first repetition is
// done; in batch mode also "unit N T" after every repetition (T: CLOCK_MONOTONIC seconds, so a
// harness can count the repetitions done in a time window, even if it stops the program).
static int wl_main(const WlOptions* o, uint64_t (*run_once)(const WlOptions*)) {
    const double start = wl_now();
    uint64_t first = run_once(o);
    long units = 1;
    printf("checksum %016llx\n", (unsigned long long)first);
    if (o->seconds > 0) printf("unit 1 %.6f\n", wl_now());
    fflush(stdout);
    while (o->seconds > 0 && wl_now() - start < o->seconds) {
        uint64_t c = run_once(o);
        if (c != first)
            wl_fail("repetition %ld: checksum %016llx differs from the first %016llx", units + 1,
                    (unsigned long long)c, (unsigned long long)first);
        units++;
        printf("unit %ld %.6f\n", units, wl_now());
        fflush(stdout);
    }
    printf("units %ld\nok %s\n", units, wl_name);
    return 0;
}

#endif
