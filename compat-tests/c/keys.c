// keys: pthread_key_create/delete/getspecific/setspecific — values are per thread and start as
// NULL; destructors run at thread exit only for non-NULL values, get the value, and are repeated
// up to PTHREAD_DESTRUCTOR_ITERATIONS times while a destructor keeps setting values; deleting a
// key runs no destructor; key creation fails only with EAGAIN, and at least 1000 keys fit.
#include <limits.h>

#include "../common/compat.h"

static pthread_key_t k1, k2, k_again, k_nodtor;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long dtor_sum;    // guarded by m: sum of values seen by d1
static int dtor_null;    // guarded by m: destructor called with NULL (must stay 0)
static int again_calls;  // guarded by m: calls of the re-arming destructor

static void d1(void* v) {
    pthread_mutex_lock(&m);
    if (!v) dtor_null++;
    dtor_sum += (long)(intptr_t)v;
    pthread_mutex_unlock(&m);
}

// Re-arms itself every time: must be called exactly PTHREAD_DESTRUCTOR_ITERATIONS times.
static void d_again(void* v) {
    pthread_mutex_lock(&m);
    if (!v) dtor_null++;
    again_calls++;
    pthread_mutex_unlock(&m);
    pthread_setspecific(k_again, v);
}

// Sets k2's value from k1's destructor: must still be destroyed in a later iteration.
static void d_chain(void* v) {
    d1(v);
    if ((intptr_t)v == 1000) pthread_setspecific(k1, (void*)2000);
}

static void* worker(void* arg) {
    intptr_t i = (intptr_t)arg;
    CHECK(pthread_getspecific(k1) == NULL, "new thread sees a non-NULL value");
    CHECK_RC(pthread_setspecific(k1, (void*)(i + 1)), 0);
    CHECK_RC(pthread_setspecific(k_nodtor, (void*)(i + 1)), 0);
    sched_yield();
    CHECK(pthread_getspecific(k1) == (void*)(i + 1), "value changed by another thread");
    if (i == 0) CHECK_RC(pthread_setspecific(k_again, (void*)5), 0);
    if (i == 1) CHECK_RC(pthread_setspecific(k2, (void*)1000), 0);
    if (i == 2) {
        // Set then reset to NULL: no destructor call for k1 in this thread.
        CHECK_RC(pthread_setspecific(k1, NULL), 0);
    }
    return NULL;
}

int main(void) {
    compat_start("keys");
    CHECK_RC(pthread_key_create(&k1, d1), 0);
    CHECK_RC(pthread_key_create(&k2, d_chain), 0);
    CHECK_RC(pthread_key_create(&k_again, d_again), 0);
    CHECK_RC(pthread_key_create(&k_nodtor, NULL), 0);
    CHECK(pthread_getspecific(k1) == NULL, "main's initial value not NULL");

    enum { N = 8 };
    pthread_t t[N];
    for (intptr_t i = 0; i < N; i++) t[i] = compat_spawn(worker, (void*)i);
    for (int i = 0; i < N; i++) compat_join(t[i]);
    // k1: values 1..8 except thread 2 (reset to NULL) = 36 - 3; k2 (value 1000) -> d_chain adds
    // 1000 and sets k1 to 2000 in thread 1 (already destroyed there in the first pass, or not
    // yet: either way it is destroyed in this or the next iteration).
    CHECK_EQ(dtor_null, 0);
    CHECK_EQ(dtor_sum, 36 - 3 + 1000 + 2000);
    CHECK_EQ(again_calls, PTHREAD_DESTRUCTOR_ITERATIONS);

    // Delete runs no destructor.
    long before = dtor_sum;
    CHECK_RC(pthread_setspecific(k1, (void*)7), 0);
    CHECK_RC(pthread_key_delete(k1), 0);
    CHECK_EQ(dtor_sum, before);

    // Creating many keys: at least 1000 (PTHREAD_KEYS_MAX is 1024, minus those in use); any
    // failure is EAGAIN.
    static pthread_key_t many[PTHREAD_KEYS_MAX + 8];
    int created = 0, rc = 0;
    for (int i = 0; i < PTHREAD_KEYS_MAX + 8; i++) {
        rc = pthread_key_create(&many[i], NULL);
        if (rc != 0) break;
        created++;
    }
    CHECK(created >= 1000, "only %d keys could be created", created);
    CHECK(rc == 0 || rc == EAGAIN, "key creation failed with %d, expected EAGAIN", rc);
    // Each key holds its own value.
    for (int i = 0; i < created; i++)
        CHECK_RC(pthread_setspecific(many[i], (void*)(intptr_t)(i + 1)), 0);
    for (int i = 0; i < created; i++)
        CHECK(pthread_getspecific(many[i]) == (void*)(intptr_t)(i + 1), "key %d", i);
    for (int i = 0; i < created; i++) CHECK_RC(pthread_key_delete(many[i]), 0);
    // Keys are reusable after deletion.
    pthread_key_t again;
    CHECK_RC(pthread_key_create(&again, NULL), 0);
    CHECK(pthread_getspecific(again) == NULL, "a recycled key carries an old value");
    return compat_ok();
}
