// trylockspin: the streamcluster/fluidanimate pattern. A grid of cells, one mutex each
// (fine-grained locks); every step each thread updates its rows of cells and adds to its
// neighbours' inflow under their locks, and the threads meet at barriers that wait by spinning on
// `while (pthread_mutex_trylock(m) == EBUSY);` (each thread closes its own gate mutex and opens it
// on arrival; a waiter spins on every other thread's gate). Integer arithmetic, so the result is
// the same for any number of threads. Checksum: every cell's final value.
#include "workload.h"

enum { kGrid = 48, kCells = kGrid * kGrid, kSets = 3, kMaxThreads = 1024 };

static WlOptions opt;
static long steps;
static uint64_t value[kCells], inflow[kCells];
static pthread_mutex_t cell_lock[kCells];
static pthread_mutex_t gate[kSets][kMaxThreads];
static long phase_of[kMaxThreads];    // barriers passed, per thread
static int held[kSets][kMaxThreads];  // gates a thread holds (only it touches its own row)
static pthread_barrier_t start;       // every thread has closed its gates

static void spin_lock(pthread_mutex_t* m) {
    int rc;
    while ((rc = pthread_mutex_trylock(m)) == EBUSY) {
    }
    wl_check_rc(rc, "trylock");
}

// The trylock-spin barrier: phase p uses gate set p % 3; a thread reopens a set two phases later.
static void spin_barrier(long me) {
    const long p = phase_of[me]++;
    const int set = (int)(p % kSets), next = (int)((p + 1) % kSets);
    if (p >= 2) {  // close the gate the next phase uses: everyone is past its previous use
        spin_lock(&gate[next][me]);
        held[next][me] = 1;
    }
    held[set][me] = 0;
    wl_check_rc(pthread_mutex_unlock(&gate[set][me]), "unlock gate");  // arrive
    for (long j = 0; j < opt.threads; j++) {
        if (j == me) continue;
        spin_lock(&gate[set][j]);  // fails until thread j arrives
        wl_check_rc(pthread_mutex_unlock(&gate[set][j]), "unlock gate");
    }
}

static uint64_t work(uint64_t v, long step) {
    uint64_t s = v ^ (uint64_t)step;
    for (int i = 0; i < 160; i++) s = wl_mix(&s);  // about a microsecond
    return s;
}

static void add_inflow(long cell, uint64_t amount) {
    wl_check_rc(pthread_mutex_lock(&cell_lock[cell]), "lock cell");
    inflow[cell] += amount;
    wl_check_rc(pthread_mutex_unlock(&cell_lock[cell]), "unlock cell");
}

static void* worker(void* arg) {
    const long me = (long)(intptr_t)arg;
    const long lo = kGrid * me / opt.threads, hi = kGrid * (me + 1) / opt.threads;
    for (int s = 0; s < kSets; s++) {  // own gates start closed
        spin_lock(&gate[s][me]);
        held[s][me] = 1;
    }
    int rc = pthread_barrier_wait(&start);
    if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD) wl_check_rc(rc, "barrier");
    for (long step = 0; step < steps; step++) {
        for (long r = lo; r < hi; r++)
            for (long c = 0; c < kGrid; c++) {
                const uint64_t out = work(value[r * kGrid + c], step) & 0xffff;
                add_inflow(r * kGrid + (c + 1) % kGrid, out);
                add_inflow(((r + 1) % kGrid) * kGrid + c, out);
                add_inflow(((r + kGrid - 1) % kGrid) * kGrid + c, out >> 1);
            }
        spin_barrier(me);
        for (long i = lo * kGrid; i < hi * kGrid; i++) {
            value[i] = value[i] * 31 + inflow[i];
            inflow[i] = 0;
        }
        spin_barrier(me);
    }
    // Open whatever gates this thread still holds once every thread is past its last wait.
    rc = pthread_barrier_wait(&start);
    if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD) wl_check_rc(rc, "barrier");
    for (int s = 0; s < kSets; s++)
        if (held[s][me]) wl_check_rc(pthread_mutex_unlock(&gate[s][me]), "unlock gate");
    return NULL;
}

static uint64_t run_once(const WlOptions* o) {
    if (o->threads > kGrid) wl_fail("at most %d threads", kGrid);
    steps = 10 * wl_scale(o);
    for (long i = 0; i < kCells; i++) {
        value[i] = (uint64_t)i;
        inflow[i] = 0;
        pthread_mutex_init(&cell_lock[i], NULL);
    }
    for (int s = 0; s < kSets; s++)
        for (int t = 0; t < o->threads; t++) pthread_mutex_init(&gate[s][t], NULL);
    for (int t = 0; t < o->threads; t++) phase_of[t] = 0;
    wl_check_rc(pthread_barrier_init(&start, NULL, (unsigned)o->threads), "barrier_init");
    pthread_t t[kMaxThreads];
    for (long i = 0; i < o->threads; i++) t[i] = wl_spawn(worker, (void*)(intptr_t)i);
    for (long i = 0; i < o->threads; i++) wl_join(t[i]);
    pthread_barrier_destroy(&start);
    uint64_t h = WL_HASH_INIT;
    for (long i = 0; i < kCells; i++) {
        if (inflow[i] != 0) wl_fail("cell %ld: inflow left over", i);
        h = wl_hash(h, value[i]);
    }
    return h;
}

int main(int argc, char** argv) {
    opt = wl_parse(argc, argv, "trylockspin");
    return wl_main(&opt, run_once);
}
