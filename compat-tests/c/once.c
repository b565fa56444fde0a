// once: pthread_once — with 16 threads racing, the init routine runs exactly once and every
// caller returns only after it has completed (the routine is slow on purpose); a once control
// in zero-filled memory works; separate controls are independent; a cancelled init routine lets a
// later caller run it again.
#include "../common/compat.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int init_calls;  // written only by the init routine
static volatile int init_done;
static pthread_barrier_t b;

static void slow_init(void) {
    init_calls++;
    usleep(20000);
    init_done = 1;
}

static void* racer(void* arg) {
    (void)arg;
    pthread_barrier_wait(&b);
    CHECK_RC(pthread_once(&once, slow_init), 0);
    CHECK(init_done, "pthread_once returned before the init routine completed");
    return NULL;
}

static pthread_once_t* heap_once;
static int heap_calls;
static void heap_init(void) {
    heap_calls++;
}

static pthread_once_t cancel_once = PTHREAD_ONCE_INIT;
static int cancel_calls;
static volatile int in_init;
static void cancellable_init(void) {
    cancel_calls++;
    if (cancel_calls == 1) {
        in_init = 1;
        for (;;) pthread_testcancel();  // first call is cancelled here
    }
}
static void* cancel_victim(void* arg) {
    (void)arg;
    pthread_once(&cancel_once, cancellable_init);
    return NULL;
}

int main(void) {
    compat_start("once");
    enum { N = 16 };
    CHECK_RC(pthread_barrier_init(&b, NULL, N), 0);
    pthread_t t[N];
    for (int i = 0; i < N; i++) t[i] = compat_spawn(racer, NULL);
    for (int i = 0; i < N; i++) compat_join(t[i]);
    CHECK_EQ(init_calls, 1);
    CHECK_RC(pthread_once(&once, slow_init), 0);
    CHECK_EQ(init_calls, 1);

    heap_once = (pthread_once_t*)calloc(4, sizeof *heap_once);  // PTHREAD_ONCE_INIT is 0
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 3; i++) CHECK_RC(pthread_once(&heap_once[k], heap_init), 0);
    CHECK_EQ(heap_calls, 4);
    free(heap_once);

    pthread_t v = compat_spawn(cancel_victim, NULL);
    while (!in_init) usleep(1000);
    CHECK_RC(pthread_cancel(v), 0);
    CHECK(compat_join(v) == PTHREAD_CANCELED, "init routine was not cancelled");
    CHECK_RC(pthread_once(&cancel_once, cancellable_init), 0);
    CHECK_EQ(cancel_calls, 2);
    return compat_ok();
}
