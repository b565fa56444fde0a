// rusage_thread: getrusage(RUSAGE_THREAD) reports the calling thread's own CPU time, as profilers
// and per-thread accounting read it. A worker computes until its own RUSAGE_THREAD CPU time reaches
// 100 ms (it must keep advancing while it computes), while the main thread waits in
// pthread_join: the main thread's own CPU time over that wait grows by far less than the worker's
// (natively by almost nothing). Also: an unknown `who` fails with EINVAL, and a null buffer with
// EFAULT. (RUSAGE_SELF is the kernel's, untouched; it is not compared with the worker's figure,
// which under arbrun counts time switched in, so a host that preempts the carrier inflates it.) The
// same holds for the main thread's getrusage made with its own `syscall` instruction (as runtimes
// without libc make it).
#include <sys/resource.h>
#include <sys/syscall.h>

#include "../common/compat.h"
#include "../common/raw_syscall.h"

enum { WORK_MS = 100 };

static int64_t cpuNs(const struct rusage* r) {
    return (int64_t)(r->ru_utime.tv_sec + r->ru_stime.tv_sec) * 1000000000 +
           (int64_t)(r->ru_utime.tv_usec + r->ru_stime.tv_usec) * 1000;
}

static int64_t threadCpuNs(void) {
    struct rusage r;
    CHECK(getrusage(RUSAGE_THREAD, &r) == 0, "getrusage(RUSAGE_THREAD): errno %d", errno);
    return cpuNs(&r);
}

// The same through the program's own system call instruction.
static int64_t rawThreadCpuNs(void) {
    struct rusage r;
    const long ret = raw6(SYS_getrusage, RUSAGE_THREAD, (long)&r, 0, 0, 0, 0);
    CHECK(ret == 0, "raw getrusage(RUSAGE_THREAD) returned %ld", ret);
    return cpuNs(&r);
}

static void* compute(void* arg) {
    int64_t* used = arg;
    const int64_t start = threadCpuNs();
    const struct timespec deadline = compat_deadline_ms(CLOCK_MONOTONIC, COMPAT_LONG_MS);
    volatile uint64_t sink = 0;
    for (;;) {
        for (int i = 0; i < 100000; ++i) sink += (uint64_t)i * i;
        *used = threadCpuNs() - start;
        if (*used >= (int64_t)WORK_MS * 1000000) break;
        CHECK(!compat_reached(CLOCK_MONOTONIC, &deadline),
              "the worker's RUSAGE_THREAD time stayed at %lld ns in %d ms of computing",
              (long long)*used, COMPAT_LONG_MS);
    }
    return NULL;
}

int main(void) {
    compat_start("rusage_thread");
    const int64_t mainBefore = threadCpuNs();
    const int64_t rawBefore = rawThreadCpuNs();
    int64_t used = 0;
    pthread_t worker;
    CHECK_RC(pthread_create(&worker, NULL, compute, &used), 0);
    CHECK_RC(pthread_join(worker, NULL), 0);
    const int64_t mainDelta = threadCpuNs() - mainBefore;
    const int64_t rawDelta = rawThreadCpuNs() - rawBefore;
    CHECK(mainDelta < used / 2,
          "the main thread's RUSAGE_THREAD time grew by %lld ns while it waited for a worker "
          "that computed %lld ns",
          (long long)mainDelta, (long long)used);
    CHECK(rawDelta < used / 2,
          "the main thread's raw getrusage(RUSAGE_THREAD) time grew by %lld ns while it waited "
          "for a worker that computed %lld ns",
          (long long)rawDelta, (long long)used);
    struct rusage r;
    errno = 0;
    CHECK(getrusage(12345, &r) == -1 && errno == EINVAL, "getrusage(12345): errno %d", errno);
    errno = 0;
    CHECK(getrusage(RUSAGE_THREAD, NULL) == -1 && errno == EFAULT,
          "getrusage(RUSAGE_THREAD, NULL): errno %d", errno);
    return compat_ok();
}
