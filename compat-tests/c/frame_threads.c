// frame_threads: the x264 pattern — one thread per frame (60 frames, at most 4 alive at once,
// the oldest joined before the next is created); frame f computes its rows from frame f-1's rows,
// waiting on f-1's mutex/condvar until the rows it needs are done (a row-progress counter with
// broadcast). The result equals a serial computation exactly.
#include "../common/compat.h"

enum { FRAMES = 60, ROWS = 64, COLS = 256, LOOKAHEAD = 4, REACH = 2 };

struct frame {
    pthread_mutex_t m;
    pthread_cond_t c;
    int rows_done;  // guarded by m
    uint32_t px[ROWS][COLS];
};
static struct frame frames[FRAMES];

// Pixel function: depends on the previous frame's rows r-REACH..r+REACH.
static uint32_t compute(const uint32_t (*prev)[COLS], int f, int r, int x) {
    uint32_t v = (uint32_t)(f * 131 + r * 31 + x);
    if (prev) {
        for (int d = -REACH; d <= REACH; d++) {
            int rr = r + d;
            if (rr < 0 || rr >= ROWS) continue;
            v = v * 2654435761u + prev[rr][(x + d + COLS) % COLS];
        }
    }
    return v ^ (v >> 13);
}

static void* encode_frame(void* arg) {
    int f = (int)(intptr_t)arg;
    struct frame* cur = &frames[f];
    struct frame* prev = f > 0 ? &frames[f - 1] : NULL;
    for (int r = 0; r < ROWS; r++) {
        if (prev) {
            int need = r + REACH + 1 < ROWS ? r + REACH + 1 : ROWS;
            pthread_mutex_lock(&prev->m);
            while (prev->rows_done < need) pthread_cond_wait(&prev->c, &prev->m);
            pthread_mutex_unlock(&prev->m);
        }
        for (int x = 0; x < COLS; x++)
            cur->px[r][x] = compute(prev ? (const uint32_t(*)[COLS])prev->px : NULL, f, r, x);
        pthread_mutex_lock(&cur->m);
        cur->rows_done = r + 1;
        pthread_cond_broadcast(&cur->c);
        pthread_mutex_unlock(&cur->m);
    }
    return NULL;
}

int main(void) {
    compat_start("frame_threads");
    for (int f = 0; f < FRAMES; f++) {
        CHECK_RC(pthread_mutex_init(&frames[f].m, NULL), 0);
        CHECK_RC(pthread_cond_init(&frames[f].c, NULL), 0);
    }
    pthread_t t[FRAMES];
    for (int f = 0; f < FRAMES; f++) {
        if (f >= LOOKAHEAD) compat_join(t[f - LOOKAHEAD]);
        t[f] = compat_spawn(encode_frame, (void*)(intptr_t)f);
    }
    for (int f = FRAMES - LOOKAHEAD; f < FRAMES; f++) compat_join(t[f]);

    // Serial reference.
    static uint32_t a[ROWS][COLS], b[ROWS][COLS];
    uint32_t(*prev)[COLS] = NULL, (*cur)[COLS] = a;
    for (int f = 0; f < FRAMES; f++) {
        for (int r = 0; r < ROWS; r++)
            for (int x = 0; x < COLS; x++)
                cur[r][x] = compute((const uint32_t(*)[COLS])prev, f, r, x);
        for (int r = 0; r < ROWS; r++)
            CHECK(memcmp(cur[r], frames[f].px[r], sizeof cur[r]) == 0, "frame %d row %d differs", f,
                  r);
        prev = cur;
        cur = cur == a ? b : a;
    }
    return compat_ok();
}
