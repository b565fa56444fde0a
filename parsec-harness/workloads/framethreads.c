// framethreads: the x264 pattern. The main thread starts a thread per frame, at most --threads of
// them at a time (it joins the oldest before starting another); a frame's row r may only be coded
// once the previous frame has finished row r+2 (its motion search range), so each frame thread
// waits on its predecessor's progress (a mutex and a condition variable per frame). Checksum:
// every row of every frame.
#include "workload.h"

enum { kRows = 36, kRowWords = 256, kMaxThreads = 1024, kRange = 2 };

typedef struct {
    long index;
    int rows_done;  // guarded by lock
    pthread_mutex_t lock;
    pthread_cond_t progress;
    uint64_t row[kRows];
} Frame;

static WlOptions opt;
static long nframes;
static Frame* frames;

static void wait_rows(Frame* f, int rows) {
    pthread_mutex_lock(&f->lock);
    while (f->rows_done < rows) pthread_cond_wait(&f->progress, &f->lock);
    pthread_mutex_unlock(&f->lock);
}

static void* encode_frame(void* arg) {
    Frame* f = arg;
    Frame* ref = f->index > 0 ? &frames[f->index - 1] : NULL;
    for (int r = 0; r < kRows; r++) {
        uint64_t h = (uint64_t)f->index * 1315423911u + (uint64_t)r;
        if (ref) {
            const int need = r + kRange + 1 < kRows ? r + kRange + 1 : kRows;
            wait_rows(ref, need);
            for (int k = r - kRange; k <= r + kRange; k++)
                if (k >= 0 && k < kRows) h = wl_hash(h, ref->row[k]);
        }
        // Motion estimation and coding of the row's macroblocks, abstracted as mixing rounds.
        uint64_t s = h;
        for (int i = 0; i < kRowWords * 16; i++) s = wl_mix(&s);
        pthread_mutex_lock(&f->lock);
        f->row[r] = s;
        f->rows_done = r + 1;
        pthread_cond_broadcast(&f->progress);
        pthread_mutex_unlock(&f->lock);
    }
    return NULL;
}

static uint64_t run_once(const WlOptions* o) {
    nframes = 40 * wl_scale(o);
    frames = calloc((size_t)nframes, sizeof *frames);
    pthread_t* t = calloc((size_t)nframes, sizeof *t);
    if (!frames || !t) wl_fail("out of memory");
    for (long i = 0; i < nframes; i++) {
        frames[i].index = i;
        pthread_mutex_init(&frames[i].lock, NULL);
        pthread_cond_init(&frames[i].progress, NULL);
    }
    for (long i = 0; i < nframes; i++) {
        if (i >= o->threads) wl_join(t[i - o->threads]);
        t[i] = wl_spawn(encode_frame, &frames[i]);
    }
    for (long i = nframes - o->threads > 0 ? nframes - o->threads : 0; i < nframes; i++)
        wl_join(t[i]);
    uint64_t h = WL_HASH_INIT;
    for (long i = 0; i < nframes; i++) {
        if (frames[i].rows_done != kRows) wl_fail("frame %ld: %d rows", i, frames[i].rows_done);
        for (int r = 0; r < kRows; r++) h = wl_hash(h, frames[i].row[r]);
    }
    free(frames);
    free(t);
    return h;
}

int main(int argc, char** argv) {
    opt = wl_parse(argc, argv, "framethreads");
    return wl_main(&opt, run_once);
}
