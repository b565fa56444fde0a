// cleanup: pthread_cleanup_push/pop — LIFO order, pop(1) runs and pop(0) skips the handler,
// handlers run on pthread_exit (outermost last) but not on a normal return after popping, nested
// in loops and functions, many levels deep.
#include "../common/compat.h"

static __thread int trace[64];
static __thread int ntrace;
static int exit_trace[64];
static int exit_ntrace;

static void rec(void* v) {
    trace[ntrace++] = (int)(intptr_t)v;
}
static void rec_exit(void* v) {
    exit_trace[exit_ntrace++] = (int)(intptr_t)v;
}

// pthread_exit through a pointer: the compiler must not treat the recursion below as endless.
static void (*volatile exit_fn)(void*) = pthread_exit;

// Pushes `depth` handlers recursively, then exits from the innermost level.
static void nest(int depth) {
    pthread_cleanup_push(rec_exit, (void*)(intptr_t)depth);
    if (depth == 0)
        exit_fn((void*)77);
    else
        nest(depth - 1);
    pthread_cleanup_pop(0);
}

static void* exiter(void* arg) {
    (void)arg;
    nest(20);
    return NULL;
}

static void* popper(void* arg) {
    (void)arg;
    pthread_cleanup_push(rec, (void*)1);
    pthread_cleanup_push(rec, (void*)2);
    pthread_cleanup_push(rec, (void*)3);
    pthread_cleanup_pop(1);  // runs 3
    pthread_cleanup_pop(0);  // skips 2
    pthread_cleanup_pop(1);  // runs 1
    for (int i = 0; i < 10; i++) {
        pthread_cleanup_push(rec, (void*)(intptr_t)(10 + i));
        pthread_cleanup_pop(i % 2);
    }
    CHECK_EQ(ntrace, 7);
    int want[7] = {3, 1, 11, 13, 15, 17, 19};
    for (int i = 0; i < 7; i++) CHECK_EQ(trace[i], want[i]);
    return (void*)(intptr_t)ntrace;
}

int main(void) {
    compat_start("cleanup");
    pthread_t t = compat_spawn(popper, NULL);
    CHECK_EQ((intptr_t)compat_join(t), 7);
    t = compat_spawn(exiter, NULL);
    CHECK_EQ((intptr_t)compat_join(t), 77);
    CHECK_EQ(exit_ntrace, 21);
    for (int i = 0; i <= 20; i++) CHECK_EQ(exit_trace[i], i);
    // In main too.
    t = compat_spawn(popper, NULL);
    compat_join(t);
    popper(NULL);
    return compat_ok();
}
