// montecarlo: the swaptions pattern. Independent Monte Carlo tasks (one generator each, seeded by
// the task's index) are split statically between threads that never synchronise until they are
// joined. The result of every task is the same whatever thread runs it. Checksum: every task's
// estimate; self-check: estimates of a driftless walk's payoff lie near their analytic mean.
#include <math.h>

#include "workload.h"

enum { kTasks = 64, kSteps = 64 };

static WlOptions opt;
static long paths;
static double estimate[kTasks];

static double gaussian(uint64_t* s) {
    // Box-Muller, one value per call (the second is discarded, as many simple codes do).
    const double u = wl_unit(s) + 1e-300, v = wl_unit(s);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static void* worker(void* arg) {
    const long me = (long)(intptr_t)arg;
    for (long task = me; task < kTasks; task += opt.threads) {
        uint64_t seed = 1000 + (uint64_t)task;
        const double vol = 0.1 + 0.005 * (double)task, dt = 1.0 / kSteps;
        double sum = 0;
        for (long p = 0; p < paths; p++) {
            double x = 0;
            for (int s = 0; s < kSteps; s++) x += vol * sqrt(dt) * gaussian(&seed);
            sum += fabs(x);  // payoff |W_1| scaled by vol: mean vol * sqrt(2/pi)
        }
        estimate[task] = sum / (double)paths;
    }
    return NULL;
}

static uint64_t run_once(const WlOptions* o) {
    paths = 600 * wl_scale(o);
    pthread_t t[1024];
    for (long i = 0; i < o->threads; i++) t[i] = wl_spawn(worker, (void*)(intptr_t)i);
    for (long i = 0; i < o->threads; i++) wl_join(t[i]);
    uint64_t h = WL_HASH_INIT;
    for (int task = 0; task < kTasks; task++) {
        const double vol = 0.1 + 0.005 * task, mean = vol * sqrt(2.0 / 3.141592653589793);
        // Standard error of |W| is about 0.6 vol / sqrt(paths); allow 8 of them.
        if (fabs(estimate[task] - mean) > 8 * 0.61 * vol / sqrt((double)paths))
            wl_fail("task %d: estimate %g, expected about %g", task, estimate[task], mean);
        h = wl_hash_double(h, estimate[task]);
    }
    return h;
}

int main(int argc, char** argv) {
    opt = wl_parse(argc, argv, "montecarlo");
    return wl_main(&opt, run_once);
}
