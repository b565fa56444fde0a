// pipeline: the dedup/ferret pattern. A reader thread makes chunks, a pool of --threads hashing
// threads and a pool of --threads "compressing" threads transform them, and a writer thread puts
// the results back in order; the stages are joined by bounded queues (a mutex and two condition
// variables each), so threads block on full and empty queues all the time. Checksum: every
// chunk's digest, folded in chunk order by the writer.
#include "workload.h"

enum { kQueue = 16, kChunkWords = 512, kMaxThreads = 1024 };

typedef struct {
    long seq;
    uint64_t data[kChunkWords];
    uint64_t digest;
} Chunk;

typedef struct {
    Chunk* items[kQueue];
    int head, count, producers;  // producers still running; 0 and empty: the stream is over
    pthread_mutex_t lock;
    pthread_cond_t not_empty, not_full;
} Queue;

static WlOptions opt;
static long nchunks;
static Queue q_hash, q_compress, q_write;
static uint64_t result;

static void queue_init(Queue* q, int producers) {
    q->head = q->count = 0;
    q->producers = producers;
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->not_full, NULL);
}

static void queue_put(Queue* q, Chunk* c) {
    pthread_mutex_lock(&q->lock);
    while (q->count == kQueue) pthread_cond_wait(&q->not_full, &q->lock);
    q->items[(q->head + q->count++) % kQueue] = c;
    pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->lock);
}

static Chunk* queue_get(Queue* q) {  // NULL: the stream is over
    pthread_mutex_lock(&q->lock);
    while (q->count == 0 && q->producers > 0) pthread_cond_wait(&q->not_empty, &q->lock);
    Chunk* c = NULL;
    if (q->count > 0) {
        c = q->items[q->head];
        q->head = (q->head + 1) % kQueue;
        q->count--;
        pthread_cond_signal(&q->not_full);
    }
    pthread_mutex_unlock(&q->lock);
    return c;
}

static void queue_producer_done(Queue* q) {
    pthread_mutex_lock(&q->lock);
    if (--q->producers == 0) pthread_cond_broadcast(&q->not_empty);
    pthread_mutex_unlock(&q->lock);
}

static void* reader(void* arg) {
    for (long s = 0; s < nchunks; s++) {
        Chunk* c = malloc(sizeof *c);
        if (!c) wl_fail("out of memory");
        c->seq = s;
        uint64_t seed = (uint64_t)s * 7919;
        for (int i = 0; i < kChunkWords; i++) c->data[i] = wl_mix(&seed) % 1000;  // compressible
        queue_put(&q_hash, c);
    }
    queue_producer_done(&q_hash);
    return NULL;
}

static void* hasher(void* arg) {
    Chunk* c;
    while ((c = queue_get(&q_hash)) != NULL) {
        uint64_t h = WL_HASH_INIT;
        for (int i = 0; i < kChunkWords; i++) h = wl_hash(h, c->data[i]);
        c->digest = h;
        queue_put(&q_compress, c);
    }
    queue_producer_done(&q_compress);
    return NULL;
}

static void* compressor(void* arg) {
    Chunk* c;
    while ((c = queue_get(&q_compress)) != NULL) {
        // Run-length and delta coding, then a few mixing rounds standing in for the real coder.
        uint64_t h = c->digest, prev = 0;
        for (int round = 0; round < 40; round++)
            for (int i = 0; i < kChunkWords; i++) {
                const uint64_t d = c->data[i] - prev;
                prev = c->data[i];
                h = (h ^ d) * 0x100000001b3ull;
            }
        c->digest = h;
        queue_put(&q_write, c);
    }
    queue_producer_done(&q_write);
    return NULL;
}

static void* writer(void* arg) {
    Chunk** pending = calloc((size_t)nchunks, sizeof *pending);
    long next = 0;
    uint64_t h = WL_HASH_INIT;
    Chunk* c;
    while ((c = queue_get(&q_write)) != NULL) {
        if (c->seq < 0 || c->seq >= nchunks || pending[c->seq]) wl_fail("chunk %ld twice", c->seq);
        pending[c->seq] = c;
        while (next < nchunks && pending[next]) {
            h = wl_hash(h, pending[next]->digest);
            free(pending[next]);
            pending[next] = (Chunk*)1;  // written
            next++;
        }
    }
    if (next != nchunks) wl_fail("%ld of %ld chunks written", next, nchunks);
    free(pending);
    result = h;
    return NULL;
}

static uint64_t run_once(const WlOptions* o) {
    nchunks = 1000 * wl_scale(o);
    queue_init(&q_hash, 1);
    queue_init(&q_compress, o->threads);
    queue_init(&q_write, o->threads);
    pthread_t r = wl_spawn(reader, NULL), w = wl_spawn(writer, NULL);
    pthread_t h[kMaxThreads], c[kMaxThreads];
    for (int i = 0; i < o->threads; i++) {
        h[i] = wl_spawn(hasher, NULL);
        c[i] = wl_spawn(compressor, NULL);
    }
    wl_join(r);
    for (int i = 0; i < o->threads; i++) {
        wl_join(h[i]);
        wl_join(c[i]);
    }
    wl_join(w);
    return result;
}

int main(int argc, char** argv) {
    opt = wl_parse(argc, argv, "pipeline");
    return wl_main(&opt, run_once);
}
