// many_mutexes: 20,000 mutexes (fluidanimate-style cell locks) — 8 threads each lock random pairs
// of them in address order and move "mass" between the two cells; total mass is conserved and
// every cell's final value matches the per-cell transfer log summed after the run; also 20,000
// static-initialised mutexes and cond pairs created and destroyed.
#include "../common/compat.h"

enum { CELLS = 20000, NT = 8, MOVES = 30000 };
static pthread_mutex_t lock[CELLS];
static long mass[CELLS];
static long delta[NT][CELLS / 1000];  // per-thread, per-1000-cell-block transfer sums

static void* mover(void* arg) {
    int me = (int)(intptr_t)arg;
    uint64_t seed = 0x9e3779b97f4a7c15ULL * (uint64_t)(me + 1);
    for (int i = 0; i < MOVES; i++) {
        int a = (int)(compat_rand(&seed) % CELLS), b = (int)(compat_rand(&seed) % CELLS);
        if (a == b) continue;
        int lo = a < b ? a : b, hi = a < b ? b : a;
        CHECK_RC(pthread_mutex_lock(&lock[lo]), 0);
        CHECK_RC(pthread_mutex_lock(&lock[hi]), 0);
        long amount = (long)(compat_rand(&seed) % 5);
        mass[a] -= amount;
        mass[b] += amount;
        delta[me][a / 1000] -= amount;
        delta[me][b / 1000] += amount;
        CHECK_RC(pthread_mutex_unlock(&lock[hi]), 0);
        CHECK_RC(pthread_mutex_unlock(&lock[lo]), 0);
    }
    return NULL;
}

int main(void) {
    compat_start("many_mutexes");
    for (int i = 0; i < CELLS; i++) {
        CHECK_RC(pthread_mutex_init(&lock[i], NULL), 0);
        mass[i] = 100;
    }
    pthread_t t[NT];
    for (intptr_t i = 0; i < NT; i++) t[i] = compat_spawn(mover, (void*)i);
    for (int i = 0; i < NT; i++) compat_join(t[i]);
    long total = 0;
    for (int i = 0; i < CELLS; i++) total += mass[i];
    CHECK_EQ(total, 100L * CELLS);
    for (int blk = 0; blk < CELLS / 1000; blk++) {
        long got = 0, want = 0;
        for (int i = blk * 1000; i < (blk + 1) * 1000; i++) got += mass[i] - 100;
        for (int k = 0; k < NT; k++) want += delta[k][blk];
        CHECK(got == want, "block %d: mass change %ld, log says %ld", blk, got, want);
    }
    for (int i = 0; i < CELLS; i++) CHECK_RC(pthread_mutex_destroy(&lock[i]), 0);

    // Many heap objects created and destroyed.
    pthread_mutex_t* ms = (pthread_mutex_t*)malloc(CELLS * sizeof *ms);
    pthread_cond_t* cs = (pthread_cond_t*)malloc(CELLS * sizeof *cs);
    for (int i = 0; i < CELLS; i++) {
        CHECK_RC(pthread_mutex_init(&ms[i], NULL), 0);
        CHECK_RC(pthread_cond_init(&cs[i], NULL), 0);
        CHECK_RC(pthread_mutex_lock(&ms[i]), 0);
        CHECK_RC(pthread_cond_signal(&cs[i]), 0);
        CHECK_RC(pthread_mutex_unlock(&ms[i]), 0);
    }
    for (int i = 0; i < CELLS; i++) {
        CHECK_RC(pthread_cond_destroy(&cs[i]), 0);
        CHECK_RC(pthread_mutex_destroy(&ms[i]), 0);
    }
    free(ms);
    free(cs);
    return compat_ok();
}
