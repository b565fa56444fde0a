// cancel_async: PTHREAD_CANCEL_ASYNCHRONOUS — a thread computing in a loop with no function calls
// at all is cancelled (the joiner gets PTHREAD_CANCELED and its cleanup handler runs).
#include "../common/compat.h"

static volatile int running;
static volatile int cleanup_ran;
static volatile unsigned long counter;

static void on_cleanup(void* arg) {
    (void)arg;
    cleanup_ran = 1;
}

static void* spin(void* arg) {
    (void)arg;
    pthread_cleanup_push(on_cleanup, NULL);
    CHECK_RC(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL), 0);
    running = 1;
    for (;;) counter++;  // no calls: only asynchronous cancellation can stop it
    pthread_cleanup_pop(0);
    return NULL;
}

int main(void) {
    compat_start("cancel_async");
    pthread_t t = compat_spawn(spin, NULL);
    while (!running) usleep(1000);
    CHECK_RC(pthread_cancel(t), 0);
    CHECK(compat_join(t) == PTHREAD_CANCELED, "async cancel: wrong join result");
    CHECK(cleanup_ran, "cleanup handler did not run on asynchronous cancellation");
    return compat_ok();
}
