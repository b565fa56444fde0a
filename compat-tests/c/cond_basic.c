// cond_basic: pthread_cond_signal/broadcast with a predicate — broadcast releases every one of
// 16 waiters; signal releases them one at a time (each signal lets at least one through and the
// total released equals the tokens given); statically initialised and pthread_cond_init'ed
// condvars; condattr pshared round trip; signal/broadcast with no waiters are no-ops.
#include "../common/compat.h"

enum { N = 16 };
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c_static = PTHREAD_COND_INITIALIZER;
static pthread_cond_t c_init;
static pthread_cond_t* c;
static int waiting;   // guarded by m: threads inside the wait loop
static int go;        // guarded by m: broadcast generation
static int tokens;    // guarded by m: one per signal
static int consumed;  // guarded by m
static pthread_cond_t arrived = PTHREAD_COND_INITIALIZER;

static void* bcast_waiter(void* arg) {
    (void)arg;
    pthread_mutex_lock(&m);
    waiting++;
    pthread_cond_signal(&arrived);
    while (!go) pthread_cond_wait(c, &m);
    waiting--;
    pthread_mutex_unlock(&m);
    return NULL;
}

static void* token_waiter(void* arg) {
    (void)arg;
    pthread_mutex_lock(&m);
    while (tokens == 0) pthread_cond_wait(c, &m);
    tokens--;
    consumed++;
    pthread_cond_signal(&arrived);
    pthread_mutex_unlock(&m);
    return NULL;
}

static void run(pthread_cond_t* cv) {
    c = cv;
    go = 0;
    pthread_t t[N];
    for (int i = 0; i < N; i++) t[i] = compat_spawn(bcast_waiter, NULL);
    pthread_mutex_lock(&m);
    while (waiting < N) pthread_cond_wait(&arrived, &m);
    go = 1;
    pthread_cond_broadcast(c);
    pthread_mutex_unlock(&m);
    for (int i = 0; i < N; i++) compat_join(t[i]);
    CHECK_EQ(waiting, 0);

    consumed = 0;
    for (int i = 0; i < N; i++) t[i] = compat_spawn(token_waiter, NULL);
    for (int i = 0; i < N; i++) {
        pthread_mutex_lock(&m);
        tokens++;
        pthread_cond_signal(c);
        // Wait until that token was taken: one signal, one waiter released.
        while (consumed < i + 1) pthread_cond_wait(&arrived, &m);
        pthread_mutex_unlock(&m);
    }
    for (int i = 0; i < N; i++) compat_join(t[i]);
    CHECK_EQ(consumed, N);
    CHECK_EQ(tokens, 0);
}

int main(void) {
    compat_start("cond_basic");
    pthread_condattr_t a;
    CHECK_RC(pthread_condattr_init(&a), 0);
    int v = -1;
    CHECK_RC(pthread_condattr_getpshared(&a, &v), 0);
    CHECK_EQ(v, PTHREAD_PROCESS_PRIVATE);
    CHECK_RC(pthread_condattr_setpshared(&a, 77), EINVAL);
    CHECK_RC(pthread_cond_init(&c_init, &a), 0);
    CHECK_RC(pthread_condattr_destroy(&a), 0);
    CHECK_RC(pthread_cond_signal(&c_init), 0);
    CHECK_RC(pthread_cond_broadcast(&c_init), 0);
    run(&c_static);
    run(&c_init);
    CHECK_RC(pthread_cond_destroy(&c_init), 0);
    return compat_ok();
}
