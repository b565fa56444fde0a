// affinity: pthread_setaffinity_np/pthread_getaffinity_np — a mask set on self or on another
// thread is read back unchanged; an empty mask is EINVAL; new threads inherit the creator's mask;
// the attribute form (pthread_attr_setaffinity_np) applies to the new thread. Only CPUs already
// in the process's mask are used, so this never needs privileges or a particular machine. The raw
// system calls (sched_setaffinity, sched_getaffinity, sched_getscheduler) agree with libc's.
#include <sched.h>

#include <sys/syscall.h>

#include "../common/compat.h"
#include "../common/raw_syscall.h"

static cpu_set_t initial;  // the process's mask at start, read-only after main's first lines

// Returns a heap copy of the calling thread's mask.
static void* get_mask(void* arg) {
    (void)arg;
    cpu_set_t* s = (cpu_set_t*)malloc(sizeof *s);
    CHECK_RC(pthread_getaffinity_np(pthread_self(), sizeof *s, s), 0);
    return s;
}

static pthread_barrier_t b;

// Waits twice so that main can change and read its mask while it is alive.
static void* parked(void* arg) {
    (void)arg;
    pthread_barrier_wait(&b);
    pthread_barrier_wait(&b);
    return get_mask(NULL);
}

int main(void) {
    compat_start("affinity");
    CHECK_RC(pthread_getaffinity_np(pthread_self(), sizeof initial, &initial), 0);
    int first = -1, count = CPU_COUNT(&initial);
    CHECK(count >= 1, "empty initial mask");
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &initial)) {
            first = i;
            break;
        }

    // Self: restrict to the first allowed CPU, read back, restore.
    cpu_set_t one, got;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    CHECK_RC(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
    CHECK_RC(pthread_getaffinity_np(pthread_self(), sizeof got, &got), 0);
    CHECK(CPU_EQUAL(&got, &one), "self mask not read back");

    // A thread created now inherits the single-CPU mask.
    pthread_t t = compat_spawn(get_mask, NULL);
    cpu_set_t* inherited = (cpu_set_t*)compat_join(t);
    CHECK(CPU_EQUAL(inherited, &one), "new thread did not inherit its creator's mask");
    free(inherited);

    CHECK_RC(pthread_setaffinity_np(pthread_self(), sizeof initial, &initial), 0);
    CHECK_RC(pthread_getaffinity_np(pthread_self(), sizeof got, &got), 0);
    CHECK(CPU_EQUAL(&got, &initial), "restored mask differs");

    // Empty mask.
    cpu_set_t empty;
    CPU_ZERO(&empty);
    CHECK_RC(pthread_setaffinity_np(pthread_self(), sizeof empty, &empty), EINVAL);
    CHECK_RC(pthread_getaffinity_np(pthread_self(), sizeof got, &got), 0);
    CHECK(CPU_EQUAL(&got, &initial), "failed setaffinity changed the mask");

    // Another thread's mask, set while it is parked, seen by main and by the thread itself.
    CHECK_RC(pthread_barrier_init(&b, NULL, 2), 0);
    t = compat_spawn(parked, NULL);
    pthread_barrier_wait(&b);
    CHECK_RC(pthread_setaffinity_np(t, sizeof one, &one), 0);
    CHECK_RC(pthread_getaffinity_np(t, sizeof got, &got), 0);
    CHECK(CPU_EQUAL(&got, &one), "other thread's mask not read back by main");
    pthread_barrier_wait(&b);
    cpu_set_t* seen = (cpu_set_t*)compat_join(t);
    CHECK(CPU_EQUAL(seen, &one), "thread does not see the mask main set");
    free(seen);

    // Attribute form.
    pthread_attr_t a;
    CHECK_RC(pthread_attr_init(&a), 0);
    CHECK_RC(pthread_attr_setaffinity_np(&a, sizeof one, &one), 0);
    CHECK_RC(pthread_attr_getaffinity_np(&a, sizeof got, &got), 0);
    CHECK(CPU_EQUAL(&got, &one), "attr affinity not read back");
    CHECK_RC(pthread_create(&t, &a, get_mask, NULL), 0);
    seen = (cpu_set_t*)compat_join(t);
    CHECK(CPU_EQUAL(seen, &one), "attr affinity not applied to the new thread");
    free(seen);
    pthread_attr_destroy(&a);

    // sched_getaffinity(0) agrees with pthread_getaffinity_np for the calling thread.
    CHECK_SYS(sched_getaffinity(0, sizeof got, &got));
    CHECK(CPU_EQUAL(&got, &initial), "sched_getaffinity disagrees");
    // sched_setaffinity(0) is the calling thread's mask too.
    CHECK_SYS(sched_setaffinity(0, sizeof one, &one));
    CHECK_RC(pthread_getaffinity_np(pthread_self(), sizeof got, &got), 0);
    CHECK(CPU_EQUAL(&got, &one), "sched_setaffinity(0) not seen by pthread_getaffinity_np");
    CHECK_RC(pthread_setaffinity_np(pthread_self(), sizeof initial, &initial), 0);
    // A buffer the kernel cannot fill (not a multiple of sizeof(long)) is EINVAL.
    CHECK_RC(pthread_getaffinity_np(pthread_self(), 1, &got), EINVAL);
    CHECK(sched_getcpu() >= 0, "sched_getcpu failed");
#if defined(__x86_64__)
    // The raw system calls are about the calling thread too: the size written comes back, and the
    // mask is the one the libc calls read and write.
    CHECK_EQ(raw6(SYS_sched_setaffinity, 0, sizeof one, (long)&one, 0, 0, 0), 0);
    CHECK_RC(pthread_getaffinity_np(pthread_self(), sizeof got, &got), 0);
    CHECK(CPU_EQUAL(&got, &one), "the raw sched_setaffinity(0) not seen by pthread_getaffinity_np");
    CPU_ZERO(&got);
    const long written = raw6(SYS_sched_getaffinity, 0, sizeof got, (long)&got, 0, 0, 0);
    CHECK(written > 0 && written <= (long)sizeof got, "raw sched_getaffinity returned %ld",
          written);
    CHECK(CPU_EQUAL(&got, &one), "the raw sched_getaffinity disagrees");
    CHECK_EQ(raw6(SYS_sched_getaffinity, 0, 1, (long)&got, 0, 0, 0), -EINVAL);
    CHECK_EQ(raw6(SYS_sched_setaffinity, 0, sizeof initial, (long)&initial, 0, 0, 0), 0);
    CHECK_RC(pthread_getaffinity_np(pthread_self(), sizeof got, &got), 0);
    CHECK(CPU_EQUAL(&got, &initial), "the raw sched_setaffinity did not restore the mask");
    CHECK_EQ(raw6(SYS_sched_getscheduler, 0, 0, 0, 0, 0, 0), SCHED_OTHER);
#endif
    return compat_ok();
}
