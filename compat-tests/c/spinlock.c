// spinlock: pthread_spin_init/lock/trylock/unlock/destroy — trylock EBUSY while held (by self and
// by another thread); 8 threads (more than cores) count under the lock with exact results;
// PTHREAD_PROCESS_SHARED init accepted; spinlocks in an array of per-bucket locks (dedup style).
#include "../common/compat.h"

enum { NT = 8, ITERS = 20000, BUCKETS = 16 };
static pthread_spinlock_t sl;
static long counter;
static pthread_spinlock_t bucket_lock[BUCKETS];
static long bucket[BUCKETS];

static void* try_other(void* arg) {
    return (void*)(intptr_t)pthread_spin_trylock((pthread_spinlock_t*)arg);
}

static void* worker(void* arg) {
    uint64_t seed = 99 + (uintptr_t)arg;
    for (int i = 0; i < ITERS; i++) {
        CHECK_RC(pthread_spin_lock(&sl), 0);
        counter++;
        CHECK_RC(pthread_spin_unlock(&sl), 0);
        int k = (int)(compat_rand(&seed) % BUCKETS);
        if (i % 2) {
            while (pthread_spin_trylock(&bucket_lock[k]) == EBUSY) sched_yield();
        } else {
            pthread_spin_lock(&bucket_lock[k]);
        }
        bucket[k]++;
        pthread_spin_unlock(&bucket_lock[k]);
    }
    return NULL;
}

int main(void) {
    compat_start("spinlock");
    CHECK_RC(pthread_spin_init(&sl, PTHREAD_PROCESS_PRIVATE), 0);
    CHECK_RC(pthread_spin_lock(&sl), 0);
    CHECK_RC(pthread_spin_trylock(&sl), EBUSY);
    pthread_t t = compat_spawn(try_other, (void*)&sl);
    CHECK_EQ((intptr_t)compat_join(t), EBUSY);
    CHECK_RC(pthread_spin_unlock(&sl), 0);
    CHECK_RC(pthread_spin_trylock(&sl), 0);
    CHECK_RC(pthread_spin_unlock(&sl), 0);
    for (int i = 0; i < BUCKETS; i++) CHECK_RC(pthread_spin_init(&bucket_lock[i], 0), 0);

    pthread_t w[NT];
    for (intptr_t i = 0; i < NT; i++) w[i] = compat_spawn(worker, (void*)i);
    for (int i = 0; i < NT; i++) compat_join(w[i]);
    CHECK_EQ(counter, (long)NT * ITERS);
    long sum = 0;
    for (int i = 0; i < BUCKETS; i++) sum += bucket[i];
    CHECK_EQ(sum, (long)NT * ITERS);
    CHECK_RC(pthread_spin_destroy(&sl), 0);

    pthread_spinlock_t ps;
    CHECK_RC(pthread_spin_init(&ps, PTHREAD_PROCESS_SHARED), 0);
    CHECK_RC(pthread_spin_lock(&ps), 0);
    CHECK_RC(pthread_spin_unlock(&ps), 0);
    CHECK_RC(pthread_spin_destroy(&ps), 0);
    return compat_ok();
}
