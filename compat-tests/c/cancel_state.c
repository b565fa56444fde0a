// cancel_state: pthread_setcancelstate/pthread_setcanceltype — with cancellation disabled a
// pending cancel is held across cancellation points and acted on at the first one after
// re-enabling; old state/type are reported; bad values are EINVAL; a thread that disables
// cancellation and returns normally is not cancelled; cleanup_pop(1) runs the handler without
// cancellation.
#include "../common/compat.h"

static pthread_barrier_t b;
static volatile int passed_points;  // cancellation points passed with cancellation disabled
static int handler_ran;

static void handler(void* v) {
    *(int*)v += 1;
}

static void* disabled_then_enabled(void* arg) {
    (void)arg;
    int old = -1;
    CHECK_RC(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old), 0);
    CHECK_EQ(old, PTHREAD_CANCEL_ENABLE);
    pthread_barrier_wait(&b);  // 1: main cancels us now
    pthread_barrier_wait(&b);  // 2: cancel has been requested
    pthread_testcancel();
    passed_points++;
    usleep(1000);
    passed_points++;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
    passed_points++;
    pthread_cleanup_push(handler, &handler_ran);
    CHECK_RC(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old), 0);
    CHECK_EQ(old, PTHREAD_CANCEL_DISABLE);
    pthread_testcancel();  // acted on here
    passed_points = 100;
    pthread_cleanup_pop(0);
    return NULL;
}

static void* disabled_returns(void* arg) {
    CHECK_RC(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL), 0);
    pthread_barrier_wait(&b);
    pthread_barrier_wait(&b);
    usleep(1000);
    return arg;
}

int main(void) {
    compat_start("cancel_state");
    int old = -1;
    CHECK_RC(pthread_setcancelstate(12345, &old), EINVAL);
    CHECK_RC(pthread_setcanceltype(12345, &old), EINVAL);
    CHECK_RC(pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &old), 0);
    CHECK_EQ(old, PTHREAD_CANCEL_DEFERRED);
    CHECK_RC(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old), 0);
    CHECK_EQ(old, PTHREAD_CANCEL_DEFERRED);
    CHECK_RC(pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &old), 0);
    CHECK_EQ(old, PTHREAD_CANCEL_ASYNCHRONOUS);
    CHECK_RC(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old), 0);
    CHECK_EQ(old, PTHREAD_CANCEL_ENABLE);

    CHECK_RC(pthread_barrier_init(&b, NULL, 2), 0);
    pthread_t t = compat_spawn(disabled_then_enabled, NULL);
    pthread_barrier_wait(&b);
    CHECK_RC(pthread_cancel(t), 0);
    pthread_barrier_wait(&b);
    CHECK(compat_join(t) == PTHREAD_CANCELED, "not cancelled after re-enabling");
    CHECK_EQ(passed_points, 3);
    CHECK_EQ(handler_ran, 1);

    t = compat_spawn(disabled_returns, (void*)9);
    pthread_barrier_wait(&b);
    CHECK_RC(pthread_cancel(t), 0);
    pthread_barrier_wait(&b);
    CHECK_EQ((intptr_t)compat_join(t), 9);

    // cleanup_pop(1) runs the handler, cleanup_pop(0) does not.
    int count = 0;
    pthread_cleanup_push(handler, &count);
    pthread_cleanup_pop(1);
    pthread_cleanup_push(handler, &count);
    pthread_cleanup_pop(0);
    CHECK_EQ(count, 1);
    return compat_ok();
}
