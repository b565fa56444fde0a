// omp_regions: the cost of an OpenMP parallel region with real work. 4 threads (libgomp), each
// region a `parallel for reduction` over 20,000 iterations; regions run back to back for about a
// second (at least 20). Prints `omp_regions us_per_region <value>` and checks every sum.
#include <omp.h>
#include <stdio.h>
#include <time.h>

enum { ITERS = 20000 };

// Monotonic nanoseconds: region times are differences on one clock.
static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(void) {
    omp_set_dynamic(0);
    omp_set_num_threads(4);
    const double expect = (double)ITERS * (ITERS - 1) / 2 * 0.5;
    long long start = now_ns(), end = start;
    long regions = 0;
    while (regions < 20 || end - start < 1000000000LL) {
        double sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(static)
        for (int i = 0; i < ITERS; i++) sum += i * 0.5;
        if (sum != expect) {
            fprintf(stderr, "omp_regions: region %ld: sum %f != %f\n", regions, sum, expect);
            return 1;
        }
        regions++;
        end = now_ns();
    }
    printf("omp_regions us_per_region %.3f\n", (end - start) / 1e3 / regions);
    return 0;
}
