// pipeline: the dedup/ferret pattern — a 4-stage pipeline (source -> 3 "fragment" threads -> 3
// "compress" threads -> 1 reorder/sink thread) joined by bounded queues (capacity 4) built from a
// mutex and two condvars (not-full / not-empty), with end-of-stream markers counted per stage.
// The sink reorders by sequence number and checks that every item arrives exactly once with the
// right payload.
#include "../common/compat.h"

enum { ITEMS = 20000, CAP = 4, W1 = 3, W2 = 3 };

struct item {
    long seq;  // -1: end of stream
    uint64_t value;
};

struct queue {
    pthread_mutex_t m;
    pthread_cond_t not_full, not_empty;
    struct item buf[CAP];
    int head, count;
};

static void q_init(struct queue* q) {
    pthread_mutex_init(&q->m, NULL);
    pthread_cond_init(&q->not_full, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    q->head = q->count = 0;
}

static void q_push(struct queue* q, struct item it) {
    pthread_mutex_lock(&q->m);
    while (q->count == CAP) pthread_cond_wait(&q->not_full, &q->m);
    q->buf[(q->head + q->count) % CAP] = it;
    q->count++;
    pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->m);
}

static struct item q_pop(struct queue* q) {
    pthread_mutex_lock(&q->m);
    while (q->count == 0) pthread_cond_wait(&q->not_empty, &q->m);
    struct item it = q->buf[q->head];
    q->head = (q->head + 1) % CAP;
    q->count--;
    pthread_cond_signal(&q->not_full);
    pthread_mutex_unlock(&q->m);
    return it;
}

static struct queue q1, q2, q3;

static uint64_t stage1(uint64_t v) {
    return v * 6364136223846793005ULL + 1442695040888963407ULL;
}
static uint64_t stage2(uint64_t v) {
    return (v ^ (v >> 29)) * 0xbf58476d1ce4e5b9ULL;
}

static void* source(void* arg) {
    (void)arg;
    for (long i = 0; i < ITEMS; i++) q_push(&q1, (struct item){i, (uint64_t)i});
    for (int k = 0; k < W1; k++) q_push(&q1, (struct item){-1, 0});
    return NULL;
}

static pthread_mutex_t done_m = PTHREAD_MUTEX_INITIALIZER;
static int fragments_done;  // guarded by done_m

// Stage 2. The last fragment thread to finish sends one end marker per compress thread.
static void* fragment(void* arg) {
    (void)arg;
    for (;;) {
        struct item it = q_pop(&q1);
        if (it.seq < 0) break;
        it.value = stage1(it.value);
        q_push(&q2, it);
    }
    pthread_mutex_lock(&done_m);
    int last = ++fragments_done == W1;
    pthread_mutex_unlock(&done_m);
    if (last)
        for (int k = 0; k < W2; k++) q_push(&q2, (struct item){-1, 0});
    return NULL;
}

// Stage 3. Each compress thread forwards its own end marker; the sink waits for all of them.
static void* compress(void* arg) {
    (void)arg;
    for (;;) {
        struct item it = q_pop(&q2);
        if (it.seq < 0) break;
        it.value = stage2(it.value);
        q_push(&q3, it);
    }
    q_push(&q3, (struct item){-1, 0});
    return NULL;
}

static void* sink(void* arg) {
    (void)arg;
    static uint64_t got[ITEMS];
    static unsigned char seen[ITEMS];
    long next = 0, received = 0;
    int markers = 0;
    for (;;) {
        struct item it = q_pop(&q3);
        if (it.seq == -1) {
            if (++markers == W2) break;
            continue;
        }
        CHECK(it.seq >= 0 && it.seq < ITEMS, "bad sequence number %ld", it.seq);
        CHECK(!seen[it.seq], "item %ld delivered twice", it.seq);
        seen[it.seq] = 1;
        got[it.seq] = it.value;
        received++;
        while (next < ITEMS && seen[next]) next++;  // in-order release point (dedup's reorder)
    }
    CHECK_EQ(received, ITEMS);
    CHECK_EQ(next, ITEMS);
    for (long i = 0; i < ITEMS; i++)
        CHECK(got[i] == stage2(stage1((uint64_t)i)), "item %ld has a wrong payload", i);
    return NULL;
}

int main(void) {
    compat_start("pipeline");
    q_init(&q1);
    q_init(&q2);
    q_init(&q3);
    pthread_t s = compat_spawn(source, NULL), k = compat_spawn(sink, NULL);
    pthread_t f[W1], c[W2];
    for (int i = 0; i < W1; i++) f[i] = compat_spawn(fragment, NULL);
    for (int i = 0; i < W2; i++) c[i] = compat_spawn(compress, NULL);
    compat_join(s);
    for (int i = 0; i < W1; i++) compat_join(f[i]);
    for (int i = 0; i < W2; i++) compat_join(c[i]);
    compat_join(k);
    return compat_ok();
}
