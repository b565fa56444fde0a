// trylock_barrier: the PARSEC (streamcluster/fluidanimate) pattern of waiting by spinning on
// `while (pthread_mutex_trylock(m) == EBUSY);` — 6 threads (more than cores) pass 20 barrier
// phases in which a waiting thread's only way forward is a trylock that fails until the last
// thread arrives. Each thread owns one mutex per phase set; arriving unlocks its own, waiting
// spins on trylock of everyone else's. Three phase sets make the relocking safe. After each phase
// every thread checks that all threads' contributions to that phase are visible.
#include "../common/compat.h"

enum { N = 6, PHASES = 20, SETS = 3 };
static pthread_mutex_t gate[SETS][N];
static long contrib[PHASES][N];
static pthread_barrier_t start;

// Takes a mutex the PARSEC way: spinning on trylock.
static void spin_lock(pthread_mutex_t* m) {
    int rc;
    while ((rc = pthread_mutex_trylock(m)) == EBUSY) {
    }
    CHECK_RC(rc, 0);
}

static void* worker(void* arg) {
    int me = (int)(intptr_t)arg;
    for (int s = 0; s < SETS; s++) spin_lock(&gate[s][me]);  // own gates start closed
    pthread_barrier_wait(&start);
    for (int p = 0; p < PHASES; p++) {
        contrib[p][me] = (long)(p + 1) * (me + 1);
        int set = p % SETS;
        // Everyone has finished phase p-2 (we completed phase p-1): reclose our gate of p-2's set,
        // which is the set phase p+1 will use.
        if (p >= 2) spin_lock(&gate[(p + 1) % SETS][me]);
        CHECK_RC(pthread_mutex_unlock(&gate[set][me]), 0);  // arrive
        for (int j = 0; j < N; j++) {
            if (j == me) continue;
            spin_lock(&gate[set][j]);  // fails (EBUSY) until thread j arrives
            CHECK_RC(pthread_mutex_unlock(&gate[set][j]), 0);
        }
        long sum = 0;
        for (int j = 0; j < N; j++) sum += __atomic_load_n(&contrib[p][j], __ATOMIC_ACQUIRE);
        CHECK(sum == (long)(p + 1) * N * (N + 1) / 2, "phase %d: sum %ld (a thread passed early)",
              p, sum);
    }
    // Once everyone is done, open the gates this thread still holds (those of the last two
    // phases' predecessors were reclosed; the last phase's gate is open).
    pthread_barrier_wait(&start);
    for (int s = 0; s < SETS; s++)
        if (s != (PHASES - 1) % SETS) CHECK_RC(pthread_mutex_unlock(&gate[s][me]), 0);
    return NULL;
}

int main(void) {
    compat_start("trylock_barrier");
    for (int s = 0; s < SETS; s++)
        for (int i = 0; i < N; i++) CHECK_RC(pthread_mutex_init(&gate[s][i], NULL), 0);
    CHECK_RC(pthread_barrier_init(&start, NULL, N), 0);
    pthread_t t[N];
    for (intptr_t i = 0; i < N; i++) t[i] = compat_spawn(worker, (void*)i);
    for (int i = 0; i < N; i++) compat_join(t[i]);
    return compat_ok();
}
