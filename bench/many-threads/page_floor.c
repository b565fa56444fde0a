// The kernel's floor under a fresh thread's memory: what a first touch of never-used anonymous
// memory costs here (page allocation, zeroing, memory-cgroup charge, and in a VM the hypervisor's
// share), measured the way a new thread touches it. Prints, on one line:
//   stack_top_page_ns=<one page per 8 MiB + 4 KiB stride: the top of each of N default-size stacks
//                      laid end to end, each in a 2 MiB region of its own, so each also needs a
//                      page-table page>
//   page_ns=<one page of N contiguous pages: what a TCB or a heap page costs>
// A thread beyond any pool touches one stack-top page and about one page of TCB/TLS (natively
// and under arbrun alike), so the two added are a floor for a fresh create on this machine.
//
// Usage: page_floor [N]   (default 10000)
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double nowNs(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

// N pages, `stride` bytes apart, each touched once (written, as a stack or a TCB is); ns per page.
static double touchFresh(long n, long stride) {
    char* base = mmap(NULL, (size_t)(n * stride), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
        perror("page_floor: mmap");
        exit(1);
    }
    const double start = nowNs();
    for (long i = 0; i < n; ++i) ((volatile char*)base)[i * stride + stride - 1] = 1;
    const double ns = (nowNs() - start) / (double)n;
    munmap(base, (size_t)(n * stride));
    return ns;
}

int main(int argc, char** argv) {
    const long n = argc > 1 ? atol(argv[1]) : 10000;
    if (n <= 0 || n > 100000) {
        fprintf(stderr, "usage: page_floor [N]   (1 <= N <= 100000)\n");
        return 2;
    }
    const double stackTop = touchFresh(n, (8L << 20) + 4096);
    const double page = touchFresh(n, 4096);
    printf("stack_top_page_ns=%.0f page_ns=%.0f\n", stackTop, page);
    return 0;
}
