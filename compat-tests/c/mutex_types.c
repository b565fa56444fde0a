// mutex_types: every mutex type set through attributes — normal, recursive (nested locking,
// unlock count, EBUSY for other threads while held, EPERM when a non-owner unlocks), errorcheck
// (relock EDEADLK, unlock by non-owner or unlocked EPERM), adaptive (as normal), default; attr
// settype/gettype round-trip and EINVAL for a bad type; trylock EBUSY on each.
#include "../common/compat.h"

static pthread_mutex_t* shared_m;  // the mutex main holds while a helper thread probes it

static void* try_other(void* arg) {
    (void)arg;
    return (void*)(intptr_t)pthread_mutex_trylock(shared_m);
}
static void* unlock_other(void* arg) {
    (void)arg;
    return (void*)(intptr_t)pthread_mutex_unlock(shared_m);
}

// Runs fn in a fresh thread and returns its int result.
static int in_thread(void* (*fn)(void*)) {
    pthread_t t = compat_spawn(fn, NULL);
    return (int)(intptr_t)compat_join(t);
}

static void init_type(pthread_mutex_t* mx, int type) {
    pthread_mutexattr_t a;
    CHECK_RC(pthread_mutexattr_init(&a), 0);
    CHECK_RC(pthread_mutexattr_settype(&a, type), 0);
    int got = -1;
    CHECK_RC(pthread_mutexattr_gettype(&a, &got), 0);
    CHECK_EQ(got, type);
    CHECK_RC(pthread_mutex_init(mx, &a), 0);
    CHECK_RC(pthread_mutexattr_destroy(&a), 0);
}

// Contended counting on `mx` with 4 threads.
static pthread_mutex_t* count_m;
static long count;
static void* counter(void* arg) {
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        pthread_mutex_lock(count_m);
        count++;
        pthread_mutex_unlock(count_m);
    }
    return NULL;
}
static void contend(pthread_mutex_t* mx) {
    count_m = mx;
    count = 0;
    pthread_t t[4];
    for (int i = 0; i < 4; i++) t[i] = compat_spawn(counter, NULL);
    for (int i = 0; i < 4; i++) compat_join(t[i]);
    CHECK_EQ(count, 80000);
}

int main(void) {
    compat_start("mutex_types");
    pthread_mutexattr_t a;
    CHECK_RC(pthread_mutexattr_init(&a), 0);
    int type = -1;
    CHECK_RC(pthread_mutexattr_gettype(&a, &type), 0);
    CHECK_EQ(type, PTHREAD_MUTEX_DEFAULT);
    CHECK_RC(pthread_mutexattr_settype(&a, 12345), EINVAL);
    CHECK_RC(pthread_mutexattr_destroy(&a), 0);

    pthread_mutex_t mx;
    shared_m = &mx;
    // Normal and default (and adaptive, which behaves as normal): trylock EBUSY by self and by
    // others while held; free after unlock.
    int plain[] = {PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_DEFAULT, PTHREAD_MUTEX_ADAPTIVE_NP};
    for (unsigned i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        init_type(&mx, plain[i]);
        CHECK_RC(pthread_mutex_lock(&mx), 0);
        CHECK_RC(pthread_mutex_trylock(&mx), EBUSY);
        CHECK_EQ(in_thread(try_other), EBUSY);
        CHECK_RC(pthread_mutex_unlock(&mx), 0);
        CHECK_RC(pthread_mutex_trylock(&mx), 0);
        CHECK_RC(pthread_mutex_unlock(&mx), 0);
        contend(&mx);
        CHECK_RC(pthread_mutex_destroy(&mx), 0);
    }

    // Recursive.
    init_type(&mx, PTHREAD_MUTEX_RECURSIVE);
    for (int i = 0; i < 10; i++) CHECK_RC(pthread_mutex_lock(&mx), 0);
    CHECK_RC(pthread_mutex_trylock(&mx), 0);  // 11 levels
    CHECK_EQ(in_thread(try_other), EBUSY);
    CHECK_EQ(in_thread(unlock_other), EPERM);
    for (int i = 0; i < 10; i++) CHECK_RC(pthread_mutex_unlock(&mx), 0);
    CHECK_EQ(in_thread(try_other), EBUSY);  // still held once
    CHECK_RC(pthread_mutex_unlock(&mx), 0);
    CHECK_RC(pthread_mutex_unlock(&mx), EPERM);  // not held any more
    contend(&mx);
    CHECK_RC(pthread_mutex_destroy(&mx), 0);

    // Errorcheck.
    init_type(&mx, PTHREAD_MUTEX_ERRORCHECK);
    CHECK_RC(pthread_mutex_unlock(&mx), EPERM);
    CHECK_RC(pthread_mutex_lock(&mx), 0);
    CHECK_RC(pthread_mutex_lock(&mx), EDEADLK);
    CHECK_RC(pthread_mutex_trylock(&mx), EBUSY);
    CHECK_EQ(in_thread(try_other), EBUSY);
    CHECK_EQ(in_thread(unlock_other), EPERM);
    CHECK_RC(pthread_mutex_unlock(&mx), 0);
    CHECK_RC(pthread_mutex_unlock(&mx), EPERM);
    contend(&mx);
    CHECK_RC(pthread_mutex_destroy(&mx), 0);

    // A normal mutex initialised with NULL attributes, destroyed and re-initialised many times.
    for (int i = 0; i < 1000; i++) {
        CHECK_RC(pthread_mutex_init(&mx, NULL), 0);
        CHECK_RC(pthread_mutex_lock(&mx), 0);
        CHECK_RC(pthread_mutex_unlock(&mx), 0);
        CHECK_RC(pthread_mutex_destroy(&mx), 0);
    }
    return compat_ok();
}
