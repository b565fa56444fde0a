// montecarlo: the blackscholes/swaptions pattern — 4 threads each run a long, call-free compute
// loop (a Monte Carlo estimate with a private xorshift generator, ~50 ms each) on their own slice;
// the joined results equal a serial recomputation bit for bit, and the estimate is sane.
#include "../common/compat.h"

enum { NT = 4, SAMPLES = 3000000 };

struct job {
    uint64_t seed;
    long inside;  // samples inside the unit circle
    double sum;   // sum of a smooth payoff-like function
};

// No function calls inside the loop (compat_rand is inlined): a user-thread runtime only gets
// control back when the thread ends.
static void run_job(struct job* j) {
    uint64_t s = j->seed;
    long inside = 0;
    double sum = 0.0;
    for (long i = 0; i < SAMPLES; i++) {
        double x = (double)(compat_rand(&s) >> 11) * (1.0 / 9007199254740992.0);
        double y = (double)(compat_rand(&s) >> 11) * (1.0 / 9007199254740992.0);
        if (x * x + y * y <= 1.0) inside++;
        double payoff = x - 0.5;
        sum += payoff > 0 ? payoff : 0.0;
    }
    j->inside = inside;
    j->sum = sum;
}

static void* thread_job(void* arg) {
    run_job((struct job*)arg);
    return NULL;
}

int main(void) {
    compat_start("montecarlo");
    struct job par[NT], ser[NT];
    pthread_t t[NT];
    for (int i = 0; i < NT; i++) {
        par[i] = (struct job){0x1234567ULL * (uint64_t)(i + 1), 0, 0.0};
        ser[i] = par[i];
        t[i] = compat_spawn(thread_job, &par[i]);
    }
    for (int i = 0; i < NT; i++) compat_join(t[i]);
    long inside = 0;
    for (int i = 0; i < NT; i++) {
        run_job(&ser[i]);
        CHECK(par[i].inside == ser[i].inside && par[i].sum == ser[i].sum,
              "thread %d result differs from serial", i);
        inside += par[i].inside;
    }
    double pi = 4.0 * (double)inside / ((double)NT * SAMPLES);
    CHECK(pi > 3.13 && pi < 3.15, "pi estimate %f", pi);
    return compat_ok();
}
