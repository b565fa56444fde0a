// pthread_exit: a value passed to pthread_exit from a nested call reaches the joiner; cleanup
// handlers and key destructors run on pthread_exit; code after pthread_exit never runs; returning
// from the start routine is equivalent to pthread_exit with the return value.
#include "../common/compat.h"

static pthread_key_t key;
static int dtor_calls;     // written by exiting threads under m
static int cleanup_calls;  // written by exiting threads under m
static int reached_after;  // must stay 0: code after pthread_exit
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static void dtor(void* v) {
    pthread_mutex_lock(&m);
    dtor_calls += (int)(intptr_t)v;
    pthread_mutex_unlock(&m);
}

static void cleanup(void* v) {
    pthread_mutex_lock(&m);
    cleanup_calls += (int)(intptr_t)v;
    pthread_mutex_unlock(&m);
}

// pthread_exit through a pointer: the compiler must not treat the recursion below as endless.
static void (*volatile exit_fn)(void*) = pthread_exit;

// Exits from deep inside a call chain.
static void deep(int depth, intptr_t value) {
    if (depth == 0) {
        exit_fn((void*)value);
        return;
    }
    deep(depth - 1, value);
    reached_after = 1;
}

static void* exiter(void* arg) {
    pthread_setspecific(key, (void*)1);
    pthread_cleanup_push(cleanup, (void*)10);
    deep(20, (intptr_t)arg);
    reached_after = 1;
    pthread_cleanup_pop(0);
    return NULL;
}

static void* returner(void* arg) {
    pthread_setspecific(key, (void*)1);
    return arg;
}

int main(void) {
    compat_start("pthread_exit");
    CHECK_RC(pthread_key_create(&key, dtor), 0);
    enum { N = 8 };
    pthread_t t[N];
    for (intptr_t i = 0; i < N; i++)
        t[i] = compat_spawn(i % 2 ? exiter : returner, (void*)(100 + i));
    for (intptr_t i = 0; i < N; i++) CHECK_EQ((intptr_t)compat_join(t[i]), 100 + i);
    CHECK_EQ(reached_after, 0);
    CHECK_EQ(dtor_calls, N);
    CHECK_EQ(cleanup_calls, 10 * (N / 2));
    return compat_ok();
}
