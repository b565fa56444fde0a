// yield_spin: the raytrace pattern — 6 workers take tiles from an atomic counter and a master
// waits for completion spinning on `while (done < total) sched_yield();`; 50 frames, each
// started by the master bumping a frame counter that workers also wait for with sched_yield.
// Every tile of every frame is rendered exactly once.
#include <sched.h>

#include "../common/compat.h"

enum { WORKERS = 6, FRAMES = 50, TILES = 64 };
static int frame_no = -1;       // the frame being rendered (workers spin until it changes)
static int next_tile[FRAMES];   // per-frame tile dispenser (per frame: late takers see >= TILES)
static int tiles_done[FRAMES];  // per-frame completed tiles
static unsigned char rendered[FRAMES][TILES];
static int quit;

static void* worker(void* arg) {
    (void)arg;
    int seen = -1;
    for (;;) {
        int f;
        while ((f = __atomic_load_n(&frame_no, __ATOMIC_ACQUIRE)) == seen &&
               !__atomic_load_n(&quit, __ATOMIC_ACQUIRE))
            sched_yield();
        if (__atomic_load_n(&quit, __ATOMIC_ACQUIRE)) break;
        seen = f;
        int tile;
        while ((tile = __atomic_fetch_add(&next_tile[f], 1, __ATOMIC_ACQ_REL)) < TILES) {
            volatile unsigned long x = 0;
            for (int i = 0; i < 2000; i++) x += (unsigned long)i * (unsigned long)tile;
            __atomic_add_fetch(&rendered[f][tile], 1, __ATOMIC_RELAXED);
            __atomic_add_fetch(&tiles_done[f], 1, __ATOMIC_RELEASE);
        }
    }
    return NULL;
}

int main(void) {
    compat_start("yield_spin");
    pthread_t t[WORKERS];
    for (int i = 0; i < WORKERS; i++) t[i] = compat_spawn(worker, NULL);
    for (int f = 0; f < FRAMES; f++) {
        __atomic_store_n(&frame_no, f, __ATOMIC_RELEASE);
        while (__atomic_load_n(&tiles_done[f], __ATOMIC_ACQUIRE) < TILES) sched_yield();
    }
    __atomic_store_n(&quit, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < WORKERS; i++) compat_join(t[i]);
    for (int f = 0; f < FRAMES; f++)
        for (int k = 0; k < TILES; k++)
            CHECK(rendered[f][k] == 1, "frame %d tile %d rendered %d times", f, k, rendered[f][k]);
    return compat_ok();
}
