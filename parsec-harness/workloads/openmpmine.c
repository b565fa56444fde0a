// openmpmine: the pattern of PARSEC's freqmine, which ships as OpenMP only: GCC's OpenMP runtime
// (libgomp, whose threads wait in their own spin loops and raw futex system calls rather than in
// pthread primitives) mining frequent itemsets from a shared, read-only transaction database.
// Every round (one minimum support each) is one parallel region of phases separated by barriers:
//   1. item counts: `omp for schedule(dynamic)` over the transactions into per-thread counts,
//      merged in a `critical` section (and a `reduction` for the total);
//   2. one thread ranks the frequent items by support (`single`), then every transaction is
//      projected onto the frequent items in rank order (the FP-tree's item order);
//   3. pair counts: `schedule(dynamic)` over the transactions into per-thread pair matrices,
//      merged in a `critical` section; one thread builds each frequent item's transaction list;
//   4. mining: `schedule(dynamic, 1)` over the frequent items, each counting the triples it heads
//      in its own transactions (frequent items have long lists: the costs are very uneven).
// Every merge is an integer sum and every item's result has its own slot, so the checksum (the
// supports, frequent pairs and triples of every round, hashed in rank order) does not depend on
// the number of threads or the schedule. --threads sets the team size (over OMP_NUM_THREADS).
#include <omp.h>

#include "workload.h"

enum {
    kUniverse = 2000,  // item ids
    kMaxLen = 30,      // items per transaction, at most (4 patterns and noise)
    kMaxFreq = 256,    // frequent items kept per round (the most frequent ones)
    kRounds = 12,
};
static const int kSupportPermille[kRounds] = {60, 50, 40, 30, 25, 20, 15, 12, 10, 8, 6, 5};

// The transaction database: written once by the main thread before the first region, read-only
// afterwards (shared by every thread of every round). Transaction t holds items
// db_items[db_off[t] .. db_off[t + 1]), ascending.
static long db_n;
static long* db_off;
static uint16_t* db_items;

// One round's state. Written by one thread inside `single` (rank, tid lists) or by the merges in
// `critical`, then read by every thread after the following barrier; proj, proj_len and item_* are
// written per transaction / per item by whichever thread the schedule gives it (one writer each).
typedef struct {
    long minsup;
    long support[kUniverse];      // phase 1: transactions containing each item
    int nfreq;                    // frequent items kept
    int item_of_rank[kMaxFreq];   // rank -> item (descending support, then ascending item)
    int rank_of_item[kUniverse];  // item -> rank, or -1
    uint16_t* proj;               // transaction t projected: ranks, ascending, at db_off[t]
    uint8_t* proj_len;            // projected length of each transaction
    uint32_t* pair;               // phase 3: pair[a * kMaxFreq + b], a < b ranks
    long* tid_off;                // rank r's transactions: tids[tid_off[r] .. tid_off[r + 1])
    int32_t* tids;
    long item_triples[kMaxFreq];   // phase 4: frequent triples headed by each rank
    uint64_t item_hash[kMaxFreq];  // and their hash
} Round;

static void* xcalloc(size_t n, size_t size) {
    void* p = calloc(n, size);
    if (!p) wl_fail("out of memory");
    return p;
}

// Ascending insertion sort of a short array (a transaction); drops duplicates, returns the length.
static int sort_unique(uint16_t* a, int n) {
    for (int i = 1; i < n; i++) {
        uint16_t v = a[i];
        int j = i - 1;
        while (j >= 0 && a[j] > v) {
            a[j + 1] = a[j];
            j--;
        }
        a[j + 1] = v;
    }
    int m = 0;
    for (int i = 0; i < n; i++)
        if (m == 0 || a[m - 1] != a[i]) a[m++] = a[i];
    return m;
}

// Builds the database once (serially: like freqmine reading its input file before mining), in
// the manner of the IBM Quest generator behind freqmine's T10I4D100K input: a pool of patterns
// (the potential frequent itemsets), each transaction a few patterns plus noise. Pattern and
// item choices are skewed (u^2), so a few items are in most transactions.
static void build_database(const WlOptions* o) {
    enum { kPatterns = 300, kPatternMax = 6 };
    static uint16_t pattern[kPatterns][kPatternMax];
    static int pattern_len[kPatterns];
    uint64_t s = 0x6672657168ull;  // "freqh"
    for (int p = 0; p < kPatterns; p++) {
        pattern_len[p] = 2 + (int)(wl_mix(&s) % (kPatternMax - 1));
        for (int k = 0; k < pattern_len[p]; k++) {
            const double u = wl_unit(&s);
            pattern[p][k] = (uint16_t)(u * u * kUniverse);
        }
    }
    db_n = 4000 * wl_scale(o);
    db_off = xcalloc((size_t)db_n + 1, sizeof *db_off);
    db_items = xcalloc((size_t)db_n * kMaxLen, sizeof *db_items);
    long at = 0;
    for (long t = 0; t < db_n; t++) {
        uint16_t* tx = db_items + at;
        int n = 0;
        const int patterns = 1 + (int)(wl_mix(&s) % 4);
        for (int k = 0; k < patterns; k++) {
            const double u = wl_unit(&s);
            const int p = (int)(u * u * kPatterns);
            for (int i = 0; i < pattern_len[p]; i++)
                if (wl_mix(&s) % 8 != 0) tx[n++] = pattern[p][i];  // patterns appear partly
        }
        const int noise = 1 + (int)(wl_mix(&s) % (kMaxLen - 4 * kPatternMax));
        for (int k = 0; k < noise; k++) tx[n++] = (uint16_t)(wl_mix(&s) % kUniverse);
        at += sort_unique(tx, n);
        db_off[t + 1] = at;
    }
}

static long items_seen;  // the reduction's shared result: zeroed before each region

static void count_items(Round* r) {
    long* mine = xcalloc(kUniverse, sizeof *mine);
#pragma omp for schedule(dynamic, 64) reduction(+ : items_seen)
    for (long t = 0; t < db_n; t++) {
        for (long k = db_off[t]; k < db_off[t + 1]; k++) mine[db_items[k]]++;
        items_seen += db_off[t + 1] - db_off[t];
    }
#pragma omp critical(openmpmine_merge)
    for (int i = 0; i < kUniverse; i++) r->support[i] += mine[i];
    free(mine);
}

// Orders items by descending support, then ascending id (a total order: ranks are unique).
static int by_support(const Round* r, int a, int b) {
    if (r->support[a] != r->support[b]) return r->support[a] > r->support[b];
    return a < b;
}

// Phase 2a (one thread, `single`, after phase 1's barrier): checks the merges against the
// reduction and the database, then ranks the frequent items, at most kMaxFreq.
static void rank_items(Round* r) {
    long sum = 0;
    for (int i = 0; i < kUniverse; i++) sum += r->support[i];
    if (sum != items_seen || sum != db_off[db_n])
        wl_fail("merged item counts %ld, reduction %ld, database %ld items", sum, items_seen,
                db_off[db_n]);
    r->nfreq = 0;
    for (int i = 0; i < kUniverse; i++) {
        r->rank_of_item[i] = -1;
        if (r->support[i] < r->minsup) continue;
        int j = r->nfreq < kMaxFreq ? r->nfreq++ : kMaxFreq;
        if (j == kMaxFreq && !by_support(r, i, r->item_of_rank[kMaxFreq - 1])) continue;
        if (j == kMaxFreq) j = kMaxFreq - 1;  // replaces the least frequent kept item
        while (j > 0 && by_support(r, i, r->item_of_rank[j - 1])) {
            r->item_of_rank[j] = r->item_of_rank[j - 1];
            j--;
        }
        r->item_of_rank[j] = i;
    }
    for (int k = 0; k < r->nfreq; k++) r->rank_of_item[r->item_of_rank[k]] = k;
}

// Phase 2b: each transaction projected onto the frequent items, as ranks in ascending order.
static void project(Round* r) {
#pragma omp for schedule(dynamic, 256)
    for (long t = 0; t < db_n; t++) {
        uint16_t* p = r->proj + db_off[t];
        int n = 0;
        for (long k = db_off[t]; k < db_off[t + 1]; k++) {
            const int rank = r->rank_of_item[db_items[k]];
            if (rank >= 0) p[n++] = (uint16_t)rank;
        }
        r->proj_len[t] = (uint8_t)sort_unique(p, n);
    }
}

// Phase 3a: per-thread pair counts over a dynamic schedule, merged in a critical section.
static void count_pairs(Round* r) {
    uint32_t* mine = xcalloc((size_t)kMaxFreq * kMaxFreq, sizeof *mine);
#pragma omp for schedule(dynamic, 64)
    for (long t = 0; t < db_n; t++) {
        const uint16_t* p = r->proj + db_off[t];
        for (int i = 0; i < r->proj_len[t]; i++)
            for (int j = i + 1; j < r->proj_len[t]; j++) mine[p[i] * kMaxFreq + p[j]]++;
    }
#pragma omp critical(openmpmine_merge)
    for (int a = 0; a < r->nfreq; a++)
        for (int b = a + 1; b < r->nfreq; b++) r->pair[a * kMaxFreq + b] += mine[a * kMaxFreq + b];
    free(mine);
}

// Phase 3b (one thread, `single`): every frequent item's transactions, in ascending order.
static void build_tid_lists(Round* r) {
    r->tid_off[0] = 0;
    for (int k = 0; k < r->nfreq; k++)
        r->tid_off[k + 1] = r->tid_off[k] + r->support[r->item_of_rank[k]];
    long fill[kMaxFreq];
    memcpy(fill, r->tid_off, sizeof fill);
    for (long t = 0; t < db_n; t++)
        for (int i = 0; i < r->proj_len[t]; i++)
            r->tids[fill[r->proj[db_off[t] + i]]++] = (int32_t)t;
}

// Phase 4, one item: counts the triples (rank, a, b) with rank < a < b in the item's
// transactions into the thread's matrix `cnt` (left all zero again), checks the pair counts
// against them, and records the frequent triples' number and hash in the item's own slot.
static void mine_item(Round* r, int rank, uint32_t* cnt) {
    long after = 0;
    for (long k = r->tid_off[rank]; k < r->tid_off[rank + 1]; k++) {
        const long t = r->tids[k];
        const uint16_t* p = r->proj + db_off[t];
        int i = 0;
        while (p[i] != rank) i++;
        after += r->proj_len[t] - i - 1;
        for (int a = i + 1; a < r->proj_len[t]; a++)
            for (int b = a + 1; b < r->proj_len[t]; b++) cnt[p[a] * kMaxFreq + p[b]]++;
    }
    long pairs = 0, triples = 0;
    uint64_t h = WL_HASH_INIT;
    for (int a = rank + 1; a < r->nfreq; a++) {
        pairs += r->pair[rank * kMaxFreq + a];
        for (int b = a + 1; b < r->nfreq; b++) {
            uint32_t* c = &cnt[a * kMaxFreq + b];
            if (*c >= r->minsup) {
                triples++;
                h = wl_hash(h, ((uint64_t)a << 48) | ((uint64_t)b << 32) | *c);
            }
            *c = 0;
        }
    }
    if (pairs != after)
        wl_fail("item rank %d: pair counts sum to %ld, its transactions to %ld", rank, pairs,
                after);
    r->item_triples[rank] = triples;
    r->item_hash[rank] = h;
}

// One round: a parallel region of the four phases, barriers between them.
static uint64_t mine_round(Round* r, int threads) {
    items_seen = 0;
#pragma omp parallel num_threads(threads)
    {
        count_items(r);
#pragma omp barrier
#pragma omp single
        rank_items(r);  // the single's implicit barrier publishes the ranks
        project(r);
        count_pairs(r);
#pragma omp barrier
#pragma omp single
        build_tid_lists(r);
        uint32_t* cnt = xcalloc((size_t)kMaxFreq * kMaxFreq, sizeof *cnt);
#pragma omp for schedule(dynamic, 1)
        for (int rank = 0; rank < r->nfreq; rank++) mine_item(r, rank, cnt);
        free(cnt);
    }
    uint64_t h = wl_hash(WL_HASH_INIT, (uint64_t)r->nfreq);
    for (int k = 0; k < r->nfreq; k++) {
        h = wl_hash(
            h, ((uint64_t)r->item_of_rank[k] << 32) | (uint64_t)r->support[r->item_of_rank[k]]);
        for (int b = k + 1; b < r->nfreq; b++)
            if (r->pair[k * kMaxFreq + b] >= r->minsup)
                h = wl_hash(h, ((uint64_t)b << 32) | r->pair[k * kMaxFreq + b]);
        h = wl_hash(wl_hash(h, (uint64_t)r->item_triples[k]), r->item_hash[k]);
    }
    return h;
}

// One repetition: every round on the database (built by the first), each with its own state.
static uint64_t run_once(const WlOptions* o) {
    if (!db_off) build_database(o);
    omp_set_dynamic(0);
    uint64_t h = WL_HASH_INIT;
    for (int round = 0; round < kRounds; round++) {
        Round* r = xcalloc(1, sizeof *r);
        r->minsup = db_n * kSupportPermille[round] / 1000;
        r->proj = xcalloc((size_t)db_off[db_n], sizeof *r->proj);
        r->proj_len = xcalloc((size_t)db_n, sizeof *r->proj_len);
        r->pair = xcalloc((size_t)kMaxFreq * kMaxFreq, sizeof *r->pair);
        r->tid_off = xcalloc(kMaxFreq + 1, sizeof *r->tid_off);
        r->tids = xcalloc((size_t)db_off[db_n], sizeof *r->tids);
        h = wl_hash(h, mine_round(r, o->threads));
        free(r->proj);
        free(r->proj_len);
        free(r->pair);
        free(r->tid_off);
        free(r->tids);
        free(r);
    }
    return h;
}

int main(int argc, char** argv) {
    WlOptions o = wl_parse(argc, argv, "openmpmine");
    return wl_main(&o, run_once);
}
