// yieldspin: the pattern of programs (and OpenMP runtimes) that wait by spinning on a flag with
// sched_yield(). Threads claim work items from a shared atomic counter in small chunks, meet at a
// barrier that waits with `while (generation == g) sched_yield();`, and one thread publishes the
// phase's result. Item costs vary, so threads wait for each other every phase. Checksum: each
// phase's result, which does not depend on the number of threads.
#include "workload.h"

enum { kItems = 256, kChunk = 4 };

static WlOptions opt;
static long phases;
static uint64_t item_value[kItems];
static uint64_t phase_seed, result;
static long next_item;           // atomic
static int arrived, generation;  // atomic

static void yield_barrier(void) {
    const int g = __atomic_load_n(&generation, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(&arrived, 1, __ATOMIC_ACQ_REL) == opt.threads) {
        __atomic_store_n(&arrived, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&generation, g + 1, __ATOMIC_RELEASE);
        return;
    }
    while (__atomic_load_n(&generation, __ATOMIC_ACQUIRE) == g) sched_yield();
}

static void* worker(void* arg) {
    const long me = (long)(intptr_t)arg;
    for (long p = 0; p < phases; p++) {
        long i;
        while ((i = __atomic_fetch_add(&next_item, kChunk, __ATOMIC_RELAXED)) < kItems) {
            for (long k = i; k < i + kChunk && k < kItems; k++) {
                uint64_t s = phase_seed ^ (uint64_t)k;
                const int cost = 8 + (int)(wl_mix(&s) % 120);  // uneven items
                for (int r = 0; r < cost; r++) s = wl_mix(&s);
                item_value[k] = s;
            }
        }
        yield_barrier();
        if (me == 0) {
            uint64_t h = result;
            for (int k = 0; k < kItems; k++) h = wl_hash(h, item_value[k]);
            result = h;
            phase_seed = h;
            next_item = 0;
        }
        yield_barrier();
    }
    return NULL;
}

static uint64_t run_once(const WlOptions* o) {
    phases = 400 * wl_scale(o);
    result = WL_HASH_INIT;
    phase_seed = 1;
    next_item = 0;
    arrived = generation = 0;
    pthread_t t[1024];
    for (long i = 0; i < o->threads; i++) t[i] = wl_spawn(worker, (void*)(intptr_t)i);
    for (long i = 0; i < o->threads; i++) wl_join(t[i]);
    return result;
}

int main(int argc, char** argv) {
    opt = wl_parse(argc, argv, "yieldspin");
    return wl_main(&opt, run_once);
}
