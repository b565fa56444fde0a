// dataparallel: the blackscholes/fluidanimate pattern. Worker threads price a fixed set of options
// with the Black-Scholes formula in many short phases separated by pthread_barrier_wait; after each
// phase one thread reduces the per-block sums (in block order, so the result does not depend on
// the number of threads) into the market move of the next phase. Checksum: every option's final
// price and the market level of each phase.
#include <math.h>

#include "workload.h"

enum { kOptions = 2048, kBlock = 128, kBlocks = kOptions / kBlock };

static WlOptions opt;
static long phases;
static double spot[kOptions], strike[kOptions], rate[kOptions], vol[kOptions], years[kOptions];
static double price[kOptions], block_sum[kBlocks];
static double market;  // written by thread 0 between barriers
static uint64_t hash;
static pthread_barrier_t barrier;

static double cndf(double x) {
    // Abramowitz-Stegun, as PARSEC's blackscholes does.
    const double k = 1.0 / (1.0 + 0.2316419 * fabs(x));
    const double poly =
        k * (0.319381530 +
             k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429))));
    const double n = 1.0 - 0.3989422804014327 * exp(-0.5 * x * x) * poly;
    return x < 0 ? 1.0 - n : n;
}

static double black_scholes(double s, double k, double r, double v, double t) {
    const double sq = v * sqrt(t);
    const double d1 = (log(s / k) + (r + 0.5 * v * v) * t) / sq;
    return s * cndf(d1) - k * exp(-r * t) * cndf(d1 - sq);
}

static void* worker(void* arg) {
    const long me = (long)(intptr_t)arg;
    // Blocks are dealt round-robin: block b belongs to thread b % threads.
    for (long p = 0; p < phases; p++) {
        const double m = market;
        for (long b = me; b < kBlocks; b += opt.threads) {
            double sum = 0;
            for (long i = b * kBlock; i < (b + 1) * kBlock; i++) {
                price[i] = black_scholes(spot[i] * m, strike[i], rate[i], vol[i], years[i]);
                sum += price[i];
            }
            block_sum[b] = sum;
        }
        int rc = pthread_barrier_wait(&barrier);
        if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD) wl_check_rc(rc, "barrier");
        if (me == 0) {
            double total = 0;
            for (long b = 0; b < kBlocks; b++) total += block_sum[b];
            // The next phase's market level: a bounded walk driven by the prices.
            market = 0.9 + 0.2 * fmod(total * 7.31, 1.0);
            hash = wl_hash_double(hash, market);
        }
        rc = pthread_barrier_wait(&barrier);
        if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD) wl_check_rc(rc, "barrier");
    }
    return NULL;
}

static uint64_t run_once(const WlOptions* o) {
    uint64_t seed = 42;
    for (long i = 0; i < kOptions; i++) {
        spot[i] = 50 + 100 * wl_unit(&seed);
        strike[i] = 50 + 100 * wl_unit(&seed);
        rate[i] = 0.01 + 0.05 * wl_unit(&seed);
        vol[i] = 0.1 + 0.5 * wl_unit(&seed);
        years[i] = 0.25 + 2 * wl_unit(&seed);
    }
    market = 1.0;
    hash = WL_HASH_INIT;
    phases = 400 * wl_scale(o);
    wl_check_rc(pthread_barrier_init(&barrier, NULL, (unsigned)o->threads), "barrier_init");
    pthread_t t[1024];
    for (long i = 0; i < o->threads; i++) t[i] = wl_spawn(worker, (void*)(intptr_t)i);
    for (long i = 0; i < o->threads; i++) wl_join(t[i]);
    pthread_barrier_destroy(&barrier);
    for (long i = 0; i < kOptions; i++) {
        if (!(price[i] >= -1e-9 && price[i] <= spot[i] * 1.2))
            wl_fail("option %ld priced %g", i, price[i]);
        hash = wl_hash_double(hash, price[i]);
    }
    return hash;
}

int main(int argc, char** argv) {
    opt = wl_parse(argc, argv, "dataparallel");
    return wl_main(&opt, run_once);
}
