// openmp_mix: GCC's OpenMP runtime (libgomp), whose threads wait in their own futex calls and
// spin loops rather than in pthread primitives. With 4 and then 8 threads, 200 parallel regions
// each: a parallel for with a sum reduction, an explicit barrier between two phases (phase 2
// reads what every thread wrote in phase 1), a critical-section counter, atomic increments,
// single and master blocks that run once per region, and every 20th region a recursive
// Fibonacci with tasks. Nested parallelism is off: an inner region gets one thread. Results are
// exact, whatever the scheduling.
#include <omp.h>

#include "../common/compat.h"

enum { REGIONS = 200, N = 10000, MAXT = 8 };

// fib(n) with a task per recursive call above a cutoff (tasks on the region's threads).
static long fib(int n) {
    if (n < 2) return n;
    if (n < 12) return fib(n - 1) + fib(n - 2);
    long a = 0, b = 0;
#pragma omp task shared(a)
    a = fib(n - 1);
#pragma omp task shared(b)
    b = fib(n - 2);
#pragma omp taskwait
    return a + b;
}

// The same value without OpenMP, for the check.
static long fib_serial(int n) {
    long a = 0, b = 1;
    for (int i = 0; i < n; i++) {
        long c = a + b;
        a = b;
        b = c;
    }
    return a;
}

// One team size: 200 regions of every construct, checked after each region.
static void run_team(int threads) {
    omp_set_num_threads(threads);
    const long long expect_sum = (long long)N * (N - 1) / 2;
    const long fib_expect = fib_serial(22);
    for (int r = 0; r < REGIONS; r++) {
        long long sum = 0;
        int critical_count = 0, atomic_count = 0, singles = 0, masters = 0, team = 0;
        int phase1[MAXT] = {0};
        int phase2_ok = 1, inner_threads = 0;
        long fib_result = -1;
#pragma omp parallel
        {
            int me = omp_get_thread_num();
#pragma omp single
            team = omp_get_num_threads();
#pragma omp for reduction(+ : sum) schedule(static)
            for (int i = 0; i < N; i++) sum += i;
            phase1[me] = r + 1;
#pragma omp barrier
            for (int k = 0; k < omp_get_num_threads(); k++)
                if (phase1[k] != r + 1) {
#pragma omp atomic write
                    phase2_ok = 0;
                }
#pragma omp critical
            critical_count++;
#pragma omp atomic
            atomic_count++;
#pragma omp single
            singles++;
#pragma omp master
            masters++;
            if (me == 0) {
#pragma omp parallel
                {
#pragma omp atomic
                    inner_threads++;
                }
            }
            if (r % 20 == 0) {
#pragma omp single
                fib_result = fib(22);
            }
        }
        CHECK(team == threads, "region %d: team of %d, asked %d", r, team, threads);
        CHECK(sum == expect_sum, "region %d: reduction %lld != %lld", r, sum, expect_sum);
        CHECK(phase2_ok, "region %d: barrier passed before every thread arrived", r);
        CHECK_EQ(critical_count, threads);
        CHECK_EQ(atomic_count, threads);
        CHECK_EQ(singles, 1);
        CHECK_EQ(masters, 1);
        CHECK(inner_threads == 1, "region %d: nested region had %d threads", r, inner_threads);
        if (r % 20 == 0) CHECK(fib_result == fib_expect, "fib(22) = %ld", fib_result);
    }
}

int main(void) {
    compat_start("openmp_mix");
    omp_set_dynamic(0);
    omp_set_max_active_levels(1);  // nested parallel off
    run_team(4);
    run_team(8);
    return compat_ok();
}
