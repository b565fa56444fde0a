// mutex_robust_pi: attribute-selected mutex kinds — robust (an owner that exits while holding it
// gives the next locker EOWNERDEAD; pthread_mutex_consistent restores it; unlocking without
// consistent makes it ENOTRECOVERABLE), priority-inheritance (PTHREAD_PRIO_INHERIT: lock, trylock
// EBUSY, contended counting), and process-shared attribute round-trips.
#include "../common/compat.h"

static pthread_mutex_t rm;

static void* die_holding(void* arg) {
    (void)arg;
    CHECK_RC(pthread_mutex_lock(&rm), 0);
    return NULL;  // exits with the robust mutex locked
}

static pthread_mutex_t pim;
static long pi_count;
static void* pi_worker(void* arg) {
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        CHECK_RC(pthread_mutex_lock(&pim), 0);
        pi_count++;
        CHECK_RC(pthread_mutex_unlock(&pim), 0);
    }
    return NULL;
}
static void* pi_try(void* arg) {
    (void)arg;
    return (void*)(intptr_t)pthread_mutex_trylock(&pim);
}

int main(void) {
    compat_start("mutex_robust_pi");
    pthread_mutexattr_t a;
    CHECK_RC(pthread_mutexattr_init(&a), 0);
    int v = -1;
    CHECK_RC(pthread_mutexattr_getrobust(&a, &v), 0);
    CHECK_EQ(v, PTHREAD_MUTEX_STALLED);
    CHECK_RC(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST), 0);
    CHECK_RC(pthread_mutexattr_getrobust(&a, &v), 0);
    CHECK_EQ(v, PTHREAD_MUTEX_ROBUST);
    CHECK_RC(pthread_mutexattr_setrobust(&a, 99), EINVAL);
    CHECK_RC(pthread_mutex_init(&rm, &a), 0);

    // Owner dies; we get EOWNERDEAD and make it consistent.
    pthread_t t = compat_spawn(die_holding, NULL);
    compat_join(t);
    CHECK_RC(pthread_mutex_lock(&rm), EOWNERDEAD);
    CHECK_RC(pthread_mutex_consistent(&rm), 0);
    CHECK_RC(pthread_mutex_unlock(&rm), 0);
    CHECK_RC(pthread_mutex_lock(&rm), 0);
    CHECK_RC(pthread_mutex_unlock(&rm), 0);

    // Owner dies; trylock gets EOWNERDEAD; unlocking without consistent -> ENOTRECOVERABLE.
    t = compat_spawn(die_holding, NULL);
    compat_join(t);
    CHECK_RC(pthread_mutex_trylock(&rm), EOWNERDEAD);
    CHECK_RC(pthread_mutex_unlock(&rm), 0);
    CHECK_RC(pthread_mutex_lock(&rm), ENOTRECOVERABLE);
    CHECK_RC(pthread_mutex_trylock(&rm), ENOTRECOVERABLE);
    CHECK_RC(pthread_mutex_destroy(&rm), 0);
    CHECK_RC(pthread_mutexattr_destroy(&a), 0);

    // Priority inheritance.
    CHECK_RC(pthread_mutexattr_init(&a), 0);
    CHECK_RC(pthread_mutexattr_getprotocol(&a, &v), 0);
    CHECK_EQ(v, PTHREAD_PRIO_NONE);
    CHECK_RC(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT), 0);
    CHECK_RC(pthread_mutexattr_getprotocol(&a, &v), 0);
    CHECK_EQ(v, PTHREAD_PRIO_INHERIT);
    CHECK_RC(pthread_mutexattr_setprotocol(&a, 99), EINVAL);
    CHECK_RC(pthread_mutex_init(&pim, &a), 0);
    CHECK_RC(pthread_mutex_lock(&pim), 0);
    t = compat_spawn(pi_try, NULL);
    CHECK_EQ((intptr_t)compat_join(t), EBUSY);
    CHECK_RC(pthread_mutex_unlock(&pim), 0);
    pthread_t w[4];
    for (int i = 0; i < 4; i++) w[i] = compat_spawn(pi_worker, NULL);
    for (int i = 0; i < 4; i++) compat_join(w[i]);
    CHECK_EQ(pi_count, 80000);
    CHECK_RC(pthread_mutex_destroy(&pim), 0);

    // Process-shared attribute round trip (its use across processes is in pshared_fork).
    CHECK_RC(pthread_mutexattr_getpshared(&a, &v), 0);
    CHECK_EQ(v, PTHREAD_PROCESS_PRIVATE);
    CHECK_RC(pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED), 0);
    CHECK_RC(pthread_mutexattr_getpshared(&a, &v), 0);
    CHECK_EQ(v, PTHREAD_PROCESS_SHARED);
    CHECK_RC(pthread_mutexattr_setpshared(&a, 99), EINVAL);
    CHECK_RC(pthread_mutexattr_destroy(&a), 0);
    return compat_ok();
}
