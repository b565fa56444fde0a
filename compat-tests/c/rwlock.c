// rwlock: pthread_rwlock_* — 6 readers hold the lock at the same time (they meet on a barrier
// while holding it); a writer excludes readers and writers (tryrdlock/trywrlock EBUSY, also from
// other threads); trywrlock EBUSY while read-held; wrlock/rdlock by the write owner EDEADLK;
// recursive read locking; static initialiser and the writer-preferring kind attribute; a counter
// protected by the write lock with concurrent readers checking an invariant.
#include "../common/compat.h"

enum { READERS = 6 };
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t b;

static void* concurrent_reader(void* arg) {
    (void)arg;
    CHECK_RC(pthread_rwlock_rdlock(&rw), 0);
    pthread_barrier_wait(&b);  // every reader holds the lock here at once
    pthread_barrier_wait(&b);  // main probes the lock in between
    CHECK_RC(pthread_rwlock_unlock(&rw), 0);
    return NULL;
}

static void* try_rd(void* arg) {
    int rc = pthread_rwlock_tryrdlock((pthread_rwlock_t*)arg);
    if (rc == 0) pthread_rwlock_unlock((pthread_rwlock_t*)arg);
    return (void*)(intptr_t)rc;
}
static void* try_wr(void* arg) {
    int rc = pthread_rwlock_trywrlock((pthread_rwlock_t*)arg);
    if (rc == 0) pthread_rwlock_unlock((pthread_rwlock_t*)arg);
    return (void*)(intptr_t)rc;
}
static int other(void* (*fn)(void*), pthread_rwlock_t* l) {
    pthread_t t = compat_spawn(fn, l);
    return (int)(intptr_t)compat_join(t);
}

// Invariant workload: writers keep a == b, readers check it.
static pthread_rwlock_t* inv_lock;
static long va, vb;
static void* inv_writer(void* arg) {
    (void)arg;
    for (int i = 0; i < 5000; i++) {
        CHECK_RC(pthread_rwlock_wrlock(inv_lock), 0);
        va++;
        sched_yield();
        vb++;
        CHECK_RC(pthread_rwlock_unlock(inv_lock), 0);
    }
    return NULL;
}
static void* inv_reader(void* arg) {
    (void)arg;
    for (int i = 0; i < 5000; i++) {
        CHECK_RC(pthread_rwlock_rdlock(inv_lock), 0);
        CHECK(va == vb, "reader saw a half-done write");
        CHECK_RC(pthread_rwlock_unlock(inv_lock), 0);
    }
    return NULL;
}
static void invariant_run(pthread_rwlock_t* l) {
    inv_lock = l;
    va = vb = 0;
    pthread_t t[6];
    for (int i = 0; i < 6; i++) t[i] = compat_spawn(i < 2 ? inv_writer : inv_reader, NULL);
    for (int i = 0; i < 6; i++) compat_join(t[i]);
    CHECK_EQ(va, 10000);
    CHECK_EQ(vb, 10000);
}

int main(void) {
    compat_start("rwlock");
    CHECK_RC(pthread_barrier_init(&b, NULL, READERS + 1), 0);
    pthread_t t[READERS];
    for (int i = 0; i < READERS; i++) t[i] = compat_spawn(concurrent_reader, NULL);
    pthread_barrier_wait(&b);
    CHECK_RC(pthread_rwlock_trywrlock(&rw), EBUSY);
    CHECK_EQ(other(try_wr, &rw), EBUSY);
    CHECK_RC(pthread_rwlock_tryrdlock(&rw), 0);  // readers share
    CHECK_RC(pthread_rwlock_unlock(&rw), 0);
    struct timespec past = {0, 0};
    CHECK_RC(pthread_rwlock_timedwrlock(&rw, &past), ETIMEDOUT);
    pthread_barrier_wait(&b);
    for (int i = 0; i < READERS; i++) compat_join(t[i]);

    // Write-held.
    CHECK_RC(pthread_rwlock_wrlock(&rw), 0);
    CHECK_RC(pthread_rwlock_wrlock(&rw), EDEADLK);
    CHECK_RC(pthread_rwlock_rdlock(&rw), EDEADLK);
    CHECK_RC(pthread_rwlock_tryrdlock(&rw), EBUSY);
    CHECK_RC(pthread_rwlock_trywrlock(&rw), EBUSY);
    CHECK_EQ(other(try_rd, &rw), EBUSY);
    CHECK_EQ(other(try_wr, &rw), EBUSY);
    CHECK_RC(pthread_rwlock_unlock(&rw), 0);
    CHECK_EQ(other(try_wr, &rw), 0);
    CHECK_EQ(other(try_rd, &rw), 0);

    // Recursive read locks by one thread.
    for (int i = 0; i < 5; i++) CHECK_RC(pthread_rwlock_rdlock(&rw), 0);
    CHECK_EQ(other(try_wr, &rw), EBUSY);
    for (int i = 0; i < 5; i++) CHECK_RC(pthread_rwlock_unlock(&rw), 0);
    CHECK_EQ(other(try_wr, &rw), 0);

    invariant_run(&rw);

    // Attributes: kind (reader/writer preference) and pshared round trips.
    pthread_rwlockattr_t a;
    CHECK_RC(pthread_rwlockattr_init(&a), 0);
    int kind = -1;
    CHECK_RC(pthread_rwlockattr_getkind_np(&a, &kind), 0);
    CHECK_EQ(kind, PTHREAD_RWLOCK_PREFER_READER_NP);
    CHECK_RC(pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP), 0);
    CHECK_RC(pthread_rwlockattr_getkind_np(&a, &kind), 0);
    CHECK_EQ(kind, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    CHECK_RC(pthread_rwlockattr_setkind_np(&a, 12345), EINVAL);
    int ps = -1;
    CHECK_RC(pthread_rwlockattr_getpshared(&a, &ps), 0);
    CHECK_EQ(ps, PTHREAD_PROCESS_PRIVATE);
    pthread_rwlock_t wp;
    CHECK_RC(pthread_rwlock_init(&wp, &a), 0);
    pthread_rwlockattr_destroy(&a);
    invariant_run(&wp);
    CHECK_RC(pthread_rwlock_destroy(&wp), 0);

    // Zero-filled memory without init is a valid default rwlock.
    pthread_rwlock_t* z = (pthread_rwlock_t*)calloc(1, sizeof *z);
    invariant_run(z);
    free(z);
    return compat_ok();
}
