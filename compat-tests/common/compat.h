// compat.h — header-only helpers shared by the compatibility programs (C and C++).
//
// The programs link nothing of ours: this header only wraps libc. Every program calls
// compat_start("<name>") first (it arms alarm(30) so that a hang becomes a failure), checks its
// results with the CHECK macros (a failed check prints `FAIL <name>: <what>` and exits 1), and ends
// with `return compat_ok();`, which prints `ok <name>`.
//
// Time helpers take the clock as a parameter so that tests can use CLOCK_MONOTONIC and
// CLOCK_REALTIME alike. "Never early" checks compare the clock read after a wait against the
// deadline given to it, on the same clock.
#ifndef COMPAT_TESTS_COMPAT_H
#define COMPAT_TESTS_COMPAT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

// Name of the running program, set once by compat_start() before any thread exists; read by all.
static const char* compat_name_ = "?";

// SIGALRM handler: a program that is still running after 30 s is hung. Only async-signal-safe
// calls.
static inline void compat_on_alarm_(int sig) {
    (void)sig;
    static const char a[] = "FAIL ";
    static const char b[] = ": timeout: still running after 30 s (hang)\n";
    ssize_t r = write(1, a, sizeof a - 1);
    r = write(1, compat_name_, strlen(compat_name_));
    r = write(1, b, sizeof b - 1);
    (void)r;
    _exit(1);
}

// Called first in main(): records the name and turns a hang into a failure after 30 s.
static inline void compat_start(const char* name) {
    compat_name_ = name;
    signal(SIGALRM, compat_on_alarm_);
    alarm(30);
}

// Prints the success line; main() returns its result.
static inline int compat_ok(void) {
    printf("ok %s\n", compat_name_);
    fflush(stdout);
    return 0;
}

// Prints `FAIL <name>: <what> (file:line)` and ends the process at once. _exit rather than exit so
// that other threads still running cannot crash in atexit handlers or static destructors.
#define COMPAT_FAIL(...)                                                                \
    do {                                                                                \
        char compat_msg_[512];                                                          \
        snprintf(compat_msg_, sizeof compat_msg_, __VA_ARGS__);                         \
        printf("FAIL %s: %s (%s:%d)\n", compat_name_, compat_msg_, __FILE__, __LINE__); \
        fflush(stdout);                                                                 \
        _exit(1);                                                                       \
    } while (0)

// CHECK(cond, fmt, ...): fails with the message when cond is false.
#define CHECK(cond, ...)                       \
    do {                                       \
        if (!(cond)) COMPAT_FAIL(__VA_ARGS__); \
    } while (0)

// CHECK_RC(expr, expected): expr returns an error number (pthread style); it must equal expected.
#define CHECK_RC(expr, expected)                                                    \
    do {                                                                            \
        int compat_rc_ = (int)(expr);                                               \
        int compat_ex_ = (int)(expected);                                           \
        if (compat_rc_ != compat_ex_)                                               \
            COMPAT_FAIL("%s returned %d (%s), expected %d (%s)", #expr, compat_rc_, \
                        strerror(compat_rc_), compat_ex_, strerror(compat_ex_));    \
    } while (0)

// CHECK_ERRNO(expr, expected_errno): expr returns -1 and sets errno (POSIX call style).
#define CHECK_ERRNO(expr, expected)                                                        \
    do {                                                                                   \
        errno = 0;                                                                         \
        long compat_r_ = (long)(expr);                                                     \
        int compat_e_ = errno;                                                             \
        if (compat_r_ != -1 || compat_e_ != (expected))                                    \
            COMPAT_FAIL("%s returned %ld errno %d (%s), expected -1 errno %d (%s)", #expr, \
                        compat_r_, compat_e_, strerror(compat_e_), (int)(expected),        \
                        strerror(expected));                                               \
    } while (0)

// CHECK_SYS(expr): a POSIX-style call that must not return -1.
#define CHECK_SYS(expr)                                                             \
    do {                                                                            \
        if ((long)(expr) == -1)                                                     \
            COMPAT_FAIL("%s failed: errno %d (%s)", #expr, errno, strerror(errno)); \
    } while (0)

// CHECK_EQ(a, b): integer equality with both values in the message.
#define CHECK_EQ(a, b)                                                                    \
    do {                                                                                  \
        long long compat_a_ = (long long)(a);                                             \
        long long compat_b_ = (long long)(b);                                             \
        if (compat_a_ != compat_b_)                                                       \
            COMPAT_FAIL("%s == %lld, expected %s == %lld", #a, compat_a_, #b, compat_b_); \
    } while (0)

// Nanoseconds on `clock` (plain int64 arithmetic is enough for relative comparisons).
static inline int64_t compat_now_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// Converts nanoseconds to a timespec.
static inline struct timespec compat_ts_from_ns(int64_t ns) {
    struct timespec ts;
    ts.tv_sec = (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    return ts;
}

// Converts a timespec to nanoseconds.
static inline int64_t compat_ns_from_ts(const struct timespec* ts) {
    return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

// Absolute deadline `ms` milliseconds from now on `clock` (for the timed waits).
static inline struct timespec compat_deadline_ms(clockid_t clock, int64_t ms) {
    return compat_ts_from_ns(compat_now_ns(clock) + ms * 1000000LL);
}

// True once `clock` has reached the absolute time `ts`: used for "never early" checks.
static inline int compat_reached(clockid_t clock, const struct timespec* ts) {
    return compat_now_ns(clock) >= compat_ns_from_ts(ts);
}

// Generous deadline for waits that are expected to succeed: long enough never to flake on a
// loaded machine, short enough that a lost wake-up fails well before alarm(30).
#define COMPAT_LONG_MS 20000

// Deterministic pseudo-random numbers (xorshift64*): results never depend on the C library.
static inline uint64_t compat_rand(uint64_t* state) {
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 2685821657736338717ULL;
}

// `out` = "$TMPDIR/<name>.XXXXXX" (/tmp without TMPDIR), a template for mkstemp/mkdtemp. run-one.sh
// gives every run a scratch TMPDIR that it removes when the program ends, however it ends: what a
// test that crashed or failed a check had left there goes too.
static inline void compat_temp_template(char* out, size_t size, const char* name) {
    const char* dir = getenv("TMPDIR");
    const int n = snprintf(out, size, "%s/%s.XXXXXX", dir && *dir ? dir : "/tmp", name);
    if (n < 0 || (size_t)n >= size) COMPAT_FAIL("temporary path for %s: TMPDIR too long", name);
}

// An open temporary regular file (read and write), already unlinked: nothing is left however the
// test ends.
static inline int compat_temp_file(const char* name) {
    char path[PATH_MAX];
    compat_temp_template(path, sizeof path, name);
    const int fd = mkstemp(path);
    if (fd < 0) COMPAT_FAIL("mkstemp for %s: %s", name, strerror(errno));
    unlink(path);
    return fd;
}

// pthread_create that fails the test on error.
static inline pthread_t compat_spawn(void* (*fn)(void*), void* arg) {
    pthread_t t;
    int rc = pthread_create(&t, NULL, fn, arg);
    if (rc != 0) COMPAT_FAIL("pthread_create: %s", strerror(rc));
    return t;
}

// pthread_join that fails the test on error and returns the thread's result.
static inline void* compat_join(pthread_t t) {
    void* ret = NULL;
    int rc = pthread_join(t, &ret);
    if (rc != 0) COMPAT_FAIL("pthread_join: %s", strerror(rc));
    return ret;
}

#ifdef __cplusplus
}
#endif

#endif  // COMPAT_TESTS_COMPAT_H
