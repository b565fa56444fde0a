// attr_misc: the remaining thread attributes and scheduling calls — detachstate reported by
// pthread_getattr_np for a detached thread, pthread_setattr_default_np/getattr_default_np,
// inheritsched/schedpolicy/schedparam/scope (PTHREAD_SCOPE_PROCESS is ENOTSUP on Linux),
// pthread_getschedparam/setschedparam(SCHED_OTHER), setschedprio, and set/getconcurrency.
#include <sched.h>

#include "../common/compat.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int detached_checked;   // guarded by m
static size_t seen_stacksize;  // guarded by m

// Reports its own detach state and stack size.
static void* report(void* arg) {
    (void)arg;
    pthread_attr_t a;
    CHECK_RC(pthread_getattr_np(pthread_self(), &a), 0);
    int ds = -1;
    CHECK_RC(pthread_attr_getdetachstate(&a, &ds), 0);
    size_t ss = 0;
    CHECK_RC(pthread_attr_getstacksize(&a, &ss), 0);
    pthread_attr_destroy(&a);
    pthread_mutex_lock(&m);
    detached_checked = ds == PTHREAD_CREATE_DETACHED ? 1 : 2;
    seen_stacksize = ss;
    pthread_cond_signal(&c);
    pthread_mutex_unlock(&m);
    return NULL;
}

static void* get_stacksize(void* arg) {
    pthread_attr_t a;
    CHECK_RC(pthread_getattr_np(pthread_self(), &a), 0);
    CHECK_RC(pthread_attr_getstacksize(&a, (size_t*)arg), 0);
    pthread_attr_destroy(&a);
    return NULL;
}

int main(void) {
    compat_start("attr_misc");
    pthread_attr_t a;
    CHECK_RC(pthread_attr_init(&a), 0);
    CHECK_RC(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED), 0);
    pthread_t t;
    CHECK_RC(pthread_create(&t, &a, report, NULL), 0);
    pthread_mutex_lock(&m);
    while (!detached_checked) pthread_cond_wait(&c, &m);
    CHECK_EQ(detached_checked, 1);
    pthread_mutex_unlock(&m);

    // Scheduling attributes round-trip.
    int v = -1;
    CHECK_RC(pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED), 0);
    CHECK_RC(pthread_attr_getinheritsched(&a, &v), 0);
    CHECK_EQ(v, PTHREAD_EXPLICIT_SCHED);
    CHECK_RC(pthread_attr_setinheritsched(&a, 99), EINVAL);
    CHECK_RC(pthread_attr_setschedpolicy(&a, SCHED_OTHER), 0);
    CHECK_RC(pthread_attr_getschedpolicy(&a, &v), 0);
    CHECK_EQ(v, SCHED_OTHER);
    CHECK_RC(pthread_attr_setschedpolicy(&a, 12345), EINVAL);
    struct sched_param sp = {0};
    CHECK_RC(pthread_attr_setschedparam(&a, &sp), 0);
    sp.sched_priority = 5;
    CHECK_RC(pthread_attr_getschedparam(&a, &sp), 0);
    CHECK_EQ(sp.sched_priority, 0);
    CHECK_RC(pthread_attr_setscope(&a, PTHREAD_SCOPE_SYSTEM), 0);
    CHECK_RC(pthread_attr_getscope(&a, &v), 0);
    CHECK_EQ(v, PTHREAD_SCOPE_SYSTEM);
    CHECK_RC(pthread_attr_setscope(&a, PTHREAD_SCOPE_PROCESS), ENOTSUP);
    CHECK_RC(pthread_attr_setscope(&a, 99), EINVAL);
    pthread_attr_destroy(&a);

    // A thread created with explicit SCHED_OTHER/0 runs.
    CHECK_RC(pthread_attr_init(&a), 0);
    CHECK_RC(pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED), 0);
    CHECK_RC(pthread_attr_setschedpolicy(&a, SCHED_OTHER), 0);
    sp.sched_priority = 0;
    CHECK_RC(pthread_attr_setschedparam(&a, &sp), 0);
    size_t ss = 0;
    CHECK_RC(pthread_create(&t, &a, get_stacksize, &ss), 0);
    compat_join(t);
    CHECK(ss > 0, "no stack size");
    pthread_attr_destroy(&a);

    // Per-thread scheduling calls on self.
    int pol = -1;
    CHECK_RC(pthread_getschedparam(pthread_self(), &pol, &sp), 0);
    CHECK_EQ(pol, SCHED_OTHER);
    CHECK_EQ(sp.sched_priority, 0);
    sp.sched_priority = 0;
    CHECK_RC(pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp), 0);
    CHECK_RC(pthread_setschedprio(pthread_self(), 0), 0);

    // Default attributes: a new default stack size applies to threads created with NULL attr.
    pthread_attr_t def, saved;
    CHECK_RC(pthread_getattr_default_np(&saved), 0);
    CHECK_RC(pthread_attr_init(&def), 0);
    CHECK_RC(pthread_attr_setstacksize(&def, 512 * 1024), 0);
    CHECK_RC(pthread_setattr_default_np(&def), 0);
    pthread_attr_t check;
    CHECK_RC(pthread_getattr_default_np(&check), 0);
    CHECK_RC(pthread_attr_getstacksize(&check, &ss), 0);
    CHECK_EQ(ss, 512 * 1024);
    pthread_attr_destroy(&check);
    ss = 0;
    t = compat_spawn(get_stacksize, &ss);
    compat_join(t);
    CHECK(ss >= 512 * 1024 && ss < 2 * 1024 * 1024, "thread got stack size %zu with default 512K",
          ss);
    CHECK_RC(pthread_setattr_default_np(&saved), 0);
    pthread_attr_destroy(&def);
    pthread_attr_destroy(&saved);

    // Concurrency level is a hint that must round-trip.
    CHECK_EQ(pthread_getconcurrency(), 0);
    CHECK_RC(pthread_setconcurrency(4), 0);
    CHECK_EQ(pthread_getconcurrency(), 4);
    CHECK_RC(pthread_setconcurrency(-1), EINVAL);
    CHECK_RC(pthread_setconcurrency(0), 0);
    return compat_ok();
}
