// mutex_static: static initialisers of every type used without pthread_mutex_init —
// PTHREAD_MUTEX_INITIALIZER, PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP,
// PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP, PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP — each behaves
// as its type (relock, EDEADLK, EPERM) and counts correctly under contention.
#include "../common/compat.h"

static pthread_mutex_t m_default = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t m_recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t m_errorcheck = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_mutex_t m_adaptive = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
static long c_default, c_recursive, c_errorcheck, c_adaptive;

static void* unlock_other(void* arg) {
    return (void*)(intptr_t)pthread_mutex_unlock((pthread_mutex_t*)arg);
}
static void* try_other(void* arg) {
    return (void*)(intptr_t)pthread_mutex_trylock((pthread_mutex_t*)arg);
}

static void* worker(void* arg) {
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        pthread_mutex_lock(&m_default);
        c_default++;
        pthread_mutex_unlock(&m_default);
        pthread_mutex_lock(&m_recursive);
        pthread_mutex_lock(&m_recursive);
        c_recursive++;
        pthread_mutex_unlock(&m_recursive);
        pthread_mutex_unlock(&m_recursive);
        CHECK_RC(pthread_mutex_lock(&m_errorcheck), 0);
        c_errorcheck++;
        CHECK_RC(pthread_mutex_unlock(&m_errorcheck), 0);
        pthread_mutex_lock(&m_adaptive);
        c_adaptive++;
        pthread_mutex_unlock(&m_adaptive);
    }
    return NULL;
}

static int other(void* (*fn)(void*), pthread_mutex_t* mx) {
    pthread_t t = compat_spawn(fn, mx);
    return (int)(intptr_t)compat_join(t);
}

int main(void) {
    compat_start("mutex_static");
    // Types are visible through their behaviour.
    CHECK_RC(pthread_mutex_lock(&m_recursive), 0);
    CHECK_RC(pthread_mutex_lock(&m_recursive), 0);
    CHECK_RC(pthread_mutex_trylock(&m_recursive), 0);
    CHECK_EQ(other(try_other, &m_recursive), EBUSY);
    CHECK_EQ(other(unlock_other, &m_recursive), EPERM);
    for (int i = 0; i < 3; i++) CHECK_RC(pthread_mutex_unlock(&m_recursive), 0);
    CHECK_RC(pthread_mutex_unlock(&m_recursive), EPERM);

    CHECK_RC(pthread_mutex_unlock(&m_errorcheck), EPERM);
    CHECK_RC(pthread_mutex_lock(&m_errorcheck), 0);
    CHECK_RC(pthread_mutex_lock(&m_errorcheck), EDEADLK);
    CHECK_EQ(other(unlock_other, &m_errorcheck), EPERM);
    CHECK_EQ(other(try_other, &m_errorcheck), EBUSY);
    CHECK_RC(pthread_mutex_unlock(&m_errorcheck), 0);

    CHECK_RC(pthread_mutex_lock(&m_default), 0);
    CHECK_RC(pthread_mutex_trylock(&m_default), EBUSY);
    CHECK_EQ(other(try_other, &m_default), EBUSY);
    CHECK_RC(pthread_mutex_unlock(&m_default), 0);
    CHECK_RC(pthread_mutex_lock(&m_adaptive), 0);
    CHECK_RC(pthread_mutex_trylock(&m_adaptive), EBUSY);
    CHECK_EQ(other(try_other, &m_adaptive), EBUSY);
    CHECK_RC(pthread_mutex_unlock(&m_adaptive), 0);

    enum { N = 4 };
    pthread_t t[N];
    for (int i = 0; i < N; i++) t[i] = compat_spawn(worker, NULL);
    for (int i = 0; i < N; i++) compat_join(t[i]);
    CHECK_EQ(c_default, N * 20000);
    CHECK_EQ(c_recursive, N * 20000);
    CHECK_EQ(c_errorcheck, N * 20000);
    CHECK_EQ(c_adaptive, N * 20000);
    return compat_ok();
}
