// create_join: pthread_create/pthread_join/pthread_self/pthread_equal — return values reach the
// joiner, arguments reach the thread, every thread has its own id, self-join is EDEADLK, joining
// in any order works, and a joined thread's resources can be reused for many generations.
#include "../common/compat.h"

#define N 16

// The id the creator got from pthread_create, written by main before the thread checks it.
static pthread_t ids[N];
static pthread_barrier_t started;

// Returns its argument doubled; checks that pthread_self() matches what the creator got.
static void* worker(void* arg) {
    intptr_t i = (intptr_t)arg;
    pthread_barrier_wait(&started);  // main has stored ids[] before it reaches the barrier
    CHECK(pthread_equal(pthread_self(), ids[i]), "thread %ld: pthread_self() != id from create",
          (long)i);
    for (int j = 0; j < N; j++)
        if (j != i)
            CHECK(!pthread_equal(ids[i], ids[j]), "threads %ld and %d share an id", (long)i, j);
    return (void*)(i * 2);
}

// Self-join must report EDEADLK rather than hang.
static void* self_joiner(void* arg) {
    (void)arg;
    return (void*)(intptr_t)pthread_join(pthread_self(), NULL);
}

static void* trivial(void* arg) {
    return arg;
}

int main(void) {
    compat_start("create_join");
    CHECK_RC(pthread_barrier_init(&started, NULL, N + 1), 0);
    for (intptr_t i = 0; i < N; i++) CHECK_RC(pthread_create(&ids[i], NULL, worker, (void*)i), 0);
    pthread_barrier_wait(&started);
    // Join in reverse order of creation.
    for (int i = N - 1; i >= 0; i--) {
        void* ret = NULL;
        CHECK_RC(pthread_join(ids[i], &ret), 0);
        CHECK_EQ((intptr_t)ret, 2 * i);
    }
    pthread_barrier_destroy(&started);

    // pthread_join with a NULL result pointer.
    pthread_t t = compat_spawn(trivial, (void*)7);
    CHECK_RC(pthread_join(t, NULL), 0);

    // Self-join in main and in a thread.
    CHECK_RC(pthread_join(pthread_self(), NULL), EDEADLK);
    t = compat_spawn(self_joiner, NULL);
    CHECK_EQ((intptr_t)compat_join(t), EDEADLK);

    // Many create/join generations (slot reuse), one at a time and four at a time.
    for (intptr_t i = 0; i < 2000; i++) {
        t = compat_spawn(trivial, (void*)i);
        CHECK_EQ((intptr_t)compat_join(t), i);
    }
    for (intptr_t i = 0; i < 500; i++) {
        pthread_t ts[4];
        for (int k = 0; k < 4; k++) ts[k] = compat_spawn(trivial, (void*)(i * 4 + k));
        for (int k = 0; k < 4; k++) CHECK_EQ((intptr_t)compat_join(ts[k]), i * 4 + k);
    }
    CHECK(pthread_equal(pthread_self(), pthread_self()), "pthread_equal(self, self) is false");
    return compat_ok();
}
