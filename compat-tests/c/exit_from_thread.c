// exit_from_thread: a non-main thread calls exit(0) while main is blocked in pthread_join on a
// thread that never ends. atexit handlers run (once, in the exiting thread) and the process
// exits with status 0.
#include "../common/compat.h"

static pthread_t exiting_thread;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static int handler_calls;

// atexit handler: prints the ok line, after checking where it runs.
static void at_exit(void) {
    handler_calls++;
    CHECK(pthread_equal(pthread_self(), exiting_thread), "atexit handler ran in another thread");
    CHECK_EQ(handler_calls, 1);
    compat_ok();
}

static void* forever(void* arg) {
    (void)arg;
    pthread_mutex_lock(&m);
    for (;;) pthread_cond_wait(&never, &m);
    return NULL;
}

static void* exiter(void* arg) {
    (void)arg;
    exiting_thread = pthread_self();
    usleep(20000);  // let main reach pthread_join (not required for correctness)
    exit(0);
}

int main(void) {
    compat_start("exit_from_thread");
    atexit(at_exit);
    pthread_t f = compat_spawn(forever, NULL);
    compat_spawn(exiter, NULL);
    pthread_join(f, NULL);  // never returns
    COMPAT_FAIL("pthread_join of a thread that never ends returned");
}
