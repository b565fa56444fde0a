// nice_thread: the nice value is per thread on Linux (setpriority(PRIO_PROCESS, 0), getpriority,
// nice()). Relative to the main thread's value at start, `base`:
// - a thread that sets its own to base + 5 reads it back; main still reads base;
// - a thread it creates starts with base + 5 (inherited), and one main creates with base;
// - nice(2) returns and leaves base + 2 in a fresh thread; values clamp at 19;
// - the raw system calls agree: getpriority returns 20 - nice, setpriority sets it;
// - sched_setattr sets policy and nice value together, sched_getattr reads them (EINVAL for
//   flags, E2BIG for a short structure);
// - bad `which`: EINVAL; with CAP_SYS_NICE dropped and RLIMIT_NICE at 0, lowering it fails
//   (setpriority: EACCES, nice: EPERM) and raising it still works. Last, in a thread of its own
//   (capabilities are per thread natively; under arbrun they go to every kernel thread).
#include <linux/capability.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "../common/compat.h"
#include "../common/raw_syscall.h"

static int base;

static int nice_now(void) {
    errno = 0;
    const int v = getpriority(PRIO_PROCESS, 0);
    CHECK(errno == 0, "getpriority: %s", strerror(errno));
    return v;
}

static void* reads_value(void* arg) {
    (void)arg;
    return (void*)(intptr_t)nice_now();
}

static void* sets_own(void* arg) {
    (void)arg;
    CHECK_SYS(setpriority(PRIO_PROCESS, 0, base + 5));
    CHECK_EQ(nice_now(), base + 5);
    const pthread_t child = compat_spawn(reads_value, NULL);
    CHECK_EQ((intptr_t)compat_join(child), base + 5);  // inherited from its creator
    return NULL;
}

static void* uses_nice(void* arg) {
    (void)arg;
    errno = 0;
    CHECK_EQ(nice(2), base + 2);
    CHECK_EQ(nice_now(), base + 2);
    CHECK_SYS(setpriority(PRIO_PROCESS, 0, 40));
    CHECK_EQ(nice_now(), 19);
#if defined(__x86_64__)
    CHECK_EQ(raw6(SYS_getpriority, PRIO_PROCESS, 0, 0, 0, 0, 0), 20 - 19);
    CHECK_EQ(raw6(SYS_setpriority, PRIO_PROCESS, 0, base + 3, 0, 0, 0), 0);
    CHECK_EQ(nice_now(), base + 3);
#endif
    return NULL;
}

// The kernel's struct sched_attr (its header clashes with glibc's sched_param).
struct attr {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
    uint32_t util_min, util_max;
};

// sched_setattr/sched_getattr on the calling thread: policy and nice value together.
static void* uses_attr(void* arg) {
    (void)arg;
    struct attr a;
    memset(&a, 0xff, sizeof a);
    CHECK_SYS(syscall(SYS_sched_getattr, 0, &a, sizeof a, 0));
    CHECK_EQ(a.size, sizeof a);
    CHECK_EQ(a.policy, SCHED_OTHER);
    CHECK_EQ(a.nice, base);
    CHECK_EQ(a.priority, 0);
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.policy = SCHED_BATCH;
    a.nice = base + 4;
    CHECK_SYS(syscall(SYS_sched_setattr, 0, &a, 0));
    CHECK_EQ(sched_getscheduler(0), SCHED_BATCH);
    CHECK_EQ(nice_now(), base + 4);
    a.policy = SCHED_OTHER;
    a.nice = base;
    CHECK_SYS(syscall(SYS_sched_setattr, 0, &a, 0));
    CHECK_EQ(sched_getscheduler(0), SCHED_OTHER);
    CHECK_EQ(nice_now(), base);
    CHECK_ERRNO(syscall(SYS_sched_setattr, 0, &a, 1), EINVAL);  // flags must be 0
    a.size = 8;
    CHECK_ERRNO(syscall(SYS_sched_setattr, 0, &a, 0), E2BIG);
    CHECK_ERRNO(syscall(SYS_sched_getattr, 0, &a, 8, 0), EINVAL);
    return NULL;
}

static void* without_cap(void* arg) {
    (void)arg;
    struct rlimit zero = {0, 0};
    CHECK_SYS(setrlimit(RLIMIT_NICE, &zero));
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    CHECK_SYS(syscall(SYS_capget, &header, data));
    data[CAP_SYS_NICE / 32].effective &= ~(1u << (CAP_SYS_NICE % 32));
    CHECK_SYS(syscall(SYS_capset, &header, data));
    CHECK_SYS(setpriority(PRIO_PROCESS, 0, 10));
    CHECK_ERRNO(setpriority(PRIO_PROCESS, 0, 5), EACCES);
    CHECK_ERRNO(nice(-1), EPERM);
    CHECK_EQ(nice_now(), 10);
    errno = 0;
    CHECK_EQ(nice(3), 13);
    return NULL;
}

int main(void) {
    compat_start("nice_thread");
    base = nice_now();
    if (base > 10) {
        printf("skip nice_thread: started at nice %d, leaving no room above\n", base);
        return 77;
    }
    compat_join(compat_spawn(sets_own, NULL));
    CHECK_EQ(nice_now(), base);
    CHECK_EQ((intptr_t)compat_join(compat_spawn(reads_value, NULL)), base);
    compat_join(compat_spawn(uses_nice, NULL));
    CHECK_EQ(nice_now(), base);
    compat_join(compat_spawn(uses_attr, NULL));
    CHECK_EQ(sched_getscheduler(0), SCHED_OTHER);
    CHECK_EQ(nice_now(), base);
    CHECK_ERRNO(setpriority(12345, 0, 1), EINVAL);
    if (geteuid() == 0) {
        compat_join(compat_spawn(without_cap, NULL));
    } else {
        printf("note: not root, the CAP_SYS_NICE part is left out\n");
    }
    CHECK_EQ(nice_now(), base);
    return compat_ok();
}
