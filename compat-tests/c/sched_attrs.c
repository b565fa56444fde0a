// sched_attrs: per-thread scheduling policies and priorities. Validation as the kernel does it
// (EINVAL: bad policy, priority out of range, SCHED_DEADLINE without sched_setattr; EPERM where
// the caller may not raise to a real-time policy or leave SCHED_IDLE), report-back through
// pthread_getschedparam and pthread_getattr_np (inheritsched included), PTHREAD_EXPLICIT_SCHED at
// creation (a missing priority is the creator's, so policy alone fails), inheritance by a thread's
// children, sched_getscheduler on the calling thread, and ESRCH for a thread that has exited. The
// real-time cases depend on privilege (CAP_SYS_NICE or RLIMIT_RTPRIO), read here as the kernel
// would, so the same checks hold natively and under arbrun, as root and not.
#include <linux/capability.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "../common/compat.h"

// Whether the kernel lets this process raise a thread to SCHED_FIFO `prio`.
static int may_use_rt(int prio) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    if (syscall(SYS_capget, &h, d) == 0 &&
        (d[CAP_SYS_NICE / 32].effective & (1u << (CAP_SYS_NICE % 32))))
        return 1;
    struct rlimit rl;
    return getrlimit(RLIMIT_RTPRIO, &rl) == 0 && rl.rlim_cur >= (rlim_t)prio;
}

// Whether the kernel lets a thread leave SCHED_IDLE again (CAP_SYS_NICE, or RLIMIT_NICE allowing
// the present nice value).
static int may_leave_idle(void) {
    if (may_use_rt(100)) return 1;  // only CAP_SYS_NICE passes for 100
    struct rlimit rl;
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0);
    return getrlimit(RLIMIT_NICE, &rl) == 0 && (rlim_t)(20 - nice) <= rl.rlim_cur;
}

static void expect_sched(pthread_t t, int policy, int prio) {
    int p = -1;
    struct sched_param sp = {-1};
    CHECK_RC(pthread_getschedparam(t, &p, &sp), 0);
    CHECK_EQ(p, policy);
    CHECK_EQ(sp.sched_priority, prio);
}

// What pthread_getattr_np says of the calling thread.
static void expect_attr(int inherit, int policy, int prio) {
    pthread_attr_t a;
    CHECK_RC(pthread_getattr_np(pthread_self(), &a), 0);
    int v = -1;
    CHECK_RC(pthread_attr_getinheritsched(&a, &v), 0);
    CHECK_EQ(v, inherit);
    CHECK_RC(pthread_attr_getschedpolicy(&a, &v), 0);
    CHECK_EQ(v, policy);
    struct sched_param sp = {-1};
    CHECK_RC(pthread_attr_getschedparam(&a, &sp), 0);
    CHECK_EQ(sp.sched_priority, prio);
    pthread_attr_destroy(&a);
}

static void* inherited(void* arg) {
    (void)arg;
    expect_sched(pthread_self(), SCHED_FIFO, 20);
    expect_attr(PTHREAD_INHERIT_SCHED, SCHED_FIFO, 20);
    return NULL;
}

// Created SCHED_FIFO 20 explicitly: reports it, hands it down, changes its priority.
static void* fifo20(void* arg) {
    (void)arg;
    expect_sched(pthread_self(), SCHED_FIFO, 20);
    expect_attr(PTHREAD_EXPLICIT_SCHED, SCHED_FIFO, 20);
    CHECK_EQ(sched_getscheduler(0), SCHED_FIFO);
    compat_join(compat_spawn(inherited, NULL));
    CHECK_RC(pthread_setschedprio(pthread_self(), 30), 0);
    expect_sched(pthread_self(), SCHED_FIFO, 30);
    CHECK_RC(pthread_setschedprio(pthread_self(), 0), EINVAL);
    struct sched_param sp = {0};
    CHECK_RC(pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp), 0);
    expect_sched(pthread_self(), SCHED_OTHER, 0);
    return NULL;
}

// Validation on the calling thread, which ends as SCHED_OTHER (or SCHED_IDLE if it may not leave).
static void* validate(void* arg) {
    (void)arg;
    const pthread_t self = pthread_self();
    struct sched_param sp = {0};
    CHECK_RC(pthread_setschedparam(self, SCHED_FIFO, &sp), EINVAL);  // RT needs 1-99
    sp.sched_priority = 100;
    CHECK_RC(pthread_setschedparam(self, SCHED_FIFO, &sp), EINVAL);
    sp.sched_priority = 5;
    CHECK_RC(pthread_setschedparam(self, SCHED_OTHER, &sp), EINVAL);  // others need 0
    sp.sched_priority = 0;
    CHECK_RC(pthread_setschedparam(self, 12345, &sp), EINVAL);
    CHECK_RC(pthread_setschedparam(self, -1, &sp), EINVAL);
    CHECK_RC(pthread_setschedparam(self, 6 /* SCHED_DEADLINE */, &sp), EINVAL);
    CHECK_RC(pthread_setschedprio(self, 5), EINVAL);
    CHECK_RC(pthread_setschedprio(self, 0), 0);
    expect_sched(self, SCHED_OTHER, 0);
    sp.sched_priority = 10;
    CHECK_RC(pthread_setschedparam(self, SCHED_RR, &sp), may_use_rt(10) ? 0 : EPERM);
    if (may_use_rt(10)) {
        expect_sched(self, SCHED_RR, 10);
        sp.sched_priority = 0;
        CHECK_RC(pthread_setschedparam(self, SCHED_OTHER, &sp), 0);
    }
    expect_sched(self, SCHED_OTHER, 0);
    sp.sched_priority = 0;
    CHECK_RC(pthread_setschedparam(self, SCHED_BATCH, &sp), 0);
    expect_sched(self, SCHED_BATCH, 0);
    expect_attr(PTHREAD_INHERIT_SCHED, SCHED_BATCH, 0);
    CHECK_EQ(sched_getscheduler(0), SCHED_BATCH);
    CHECK_RC(pthread_setschedparam(self, SCHED_IDLE, &sp), 0);
    expect_sched(self, SCHED_IDLE, 0);
    CHECK_RC(pthread_setschedparam(self, SCHED_OTHER, &sp), may_leave_idle() ? 0 : EPERM);
    return NULL;
}

static void* quick(void* arg) {
    (void)arg;
    return NULL;
}

static int create_with(int policy_set, int policy, int param_set, int prio, int policy_after) {
    pthread_attr_t a;
    CHECK_RC(pthread_attr_init(&a), 0);
    CHECK_RC(pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED), 0);
    if (policy_set) CHECK_RC(pthread_attr_setschedpolicy(&a, policy), 0);
    if (param_set) {
        struct sched_param sp = {prio};
        CHECK_RC(pthread_attr_setschedparam(&a, &sp), 0);
    }
    if (policy_after >= 0) CHECK_RC(pthread_attr_setschedpolicy(&a, policy_after), 0);
    pthread_t t;
    const int rc =
        pthread_create(&t, &a, policy == SCHED_FIFO && prio == 20 ? fifo20 : quick, NULL);
    pthread_attr_destroy(&a);
    if (rc == 0) compat_join(t);
    return rc;
}

int main(void) {
    compat_start("sched_attrs");
    expect_sched(pthread_self(), SCHED_OTHER, 0);  // ctest runs us as SCHED_OTHER
    compat_join(compat_spawn(validate, NULL));
    expect_sched(pthread_self(), SCHED_OTHER, 0);  // another thread's changes are its own

    // Explicit scheduling at creation.
    CHECK_RC(create_with(1, SCHED_FIFO, 1, 20, -1), may_use_rt(20) ? 0 : EPERM);
    CHECK_RC(create_with(1, SCHED_FIFO, 0, 0, -1), EINVAL);            // the creator's priority 0
    CHECK_RC(create_with(1, SCHED_FIFO, 1, 20, SCHED_OTHER), EINVAL);  // OTHER with 20
    CHECK_RC(create_with(0, 0, 1, 0, -1), 0);                          // OTHER 0: fine

    // A thread that has exited (not joined yet) has no scheduling: ESRCH once it is gone.
    pthread_t t = compat_spawn(quick, NULL);
    int policy;
    struct sched_param sp;
    int rc;
    const int64_t limit = compat_now_ns(CLOCK_MONOTONIC) + 10000000000LL;
    while ((rc = pthread_getschedparam(t, &policy, &sp)) == 0) {
        CHECK(compat_now_ns(CLOCK_MONOTONIC) < limit, "an exited thread still has scheduling");
        sched_yield();
    }
    CHECK_RC(rc, ESRCH);
    sp.sched_priority = 0;
    CHECK_RC(pthread_setschedparam(t, SCHED_OTHER, &sp), ESRCH);
    CHECK_RC(pthread_setschedprio(t, 0), ESRCH);
    compat_join(t);
    return compat_ok();
}
