// join_esrch: what glibc 2.36 answers through the pthread_t of a thread that is gone, in the cases
// where its answer is deterministic (no thread is created in between, so the descriptor stays in
// glibc's stack cache and is not reused): a joined thread (glibc sets its tid to -1) gives ESRCH
// to join, detach, getschedparam and setschedprio, EBUSY to tryjoin and 0 to pthread_kill (the
// GLIBC_2.34 symbol returns 0 for a thread that has exited); a detached thread that exited gives
// EINVAL to join and detach and 0 to pthread_kill; a thread that exited and was detached
// afterwards is freed at once, and then join says EINVAL too.
#include <sched.h>

#include "../common/compat.h"

static void* quick(void* arg) {
    (void)arg;
    return NULL;
}

// Waits (bounded) until `t` has exited: glibc's getschedparam says ESRCH once its tid is 0.
static void wait_exited(pthread_t t) {
    int policy;
    struct sched_param sp;
    const int64_t limit = compat_now_ns(CLOCK_MONOTONIC) + 10000000000LL;
    while (pthread_getschedparam(t, &policy, &sp) == 0) {
        CHECK(compat_now_ns(CLOCK_MONOTONIC) < limit, "the thread never exited");
        sched_yield();
    }
}

int main(void) {
    compat_start("join_esrch");
    int policy;
    struct sched_param sp;

    // Joined.
    pthread_t t = compat_spawn(quick, NULL);
    compat_join(t);
    CHECK_RC(pthread_join(t, NULL), ESRCH);
    CHECK_RC(pthread_tryjoin_np(t, NULL), EBUSY);
    CHECK_RC(pthread_kill(t, 0), 0);
    CHECK_RC(pthread_detach(t), ESRCH);
    CHECK_RC(pthread_join(t, NULL), ESRCH);
    CHECK_RC(pthread_getschedparam(t, &policy, &sp), ESRCH);
    CHECK_RC(pthread_setschedprio(t, 0), ESRCH);

    // Detached, then exited.
    pthread_attr_t a;
    CHECK_RC(pthread_attr_init(&a), 0);
    CHECK_RC(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED), 0);
    CHECK_RC(pthread_create(&t, &a, quick, NULL), 0);
    pthread_attr_destroy(&a);
    wait_exited(t);
    CHECK_RC(pthread_kill(t, 0), 0);
    CHECK_RC(pthread_join(t, NULL), EINVAL);
    CHECK_RC(pthread_detach(t), EINVAL);

    // Exited, then detached (which frees it), then joined.
    t = compat_spawn(quick, NULL);
    wait_exited(t);
    CHECK_RC(pthread_kill(t, 0), 0);
    CHECK_RC(pthread_detach(t), 0);
    CHECK_RC(pthread_join(t, NULL), EINVAL);
    return compat_ok();
}
