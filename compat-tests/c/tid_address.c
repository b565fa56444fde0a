// tid_address: set_tid_address and prctl(PR_GET_TID_ADDRESS), through syscall() and through the
// `syscall` instruction itself, as stress-ng's pthread stressor uses them. The kernel keeps the
// address per thread, so:
// - each of THREADS threads, over ROUNDS rounds that yield in the middle (under arbrun a user
//   thread may then move to another carrier), reads its address, clears it, reads back null, sets
//   it back, and reads back the same address; set_tid_address returns a positive tid each time;
// - a detached thread that set its address to a word of its own gets, when it ends, what the
//   kernel gives: the word set to 0 and a futex waiter on it woken (main waits there);
// - prctl(PR_GET_TID_ADDRESS) with a null pointer fails with EFAULT.
// Skipped where the kernel lacks PR_GET_TID_ADDRESS (it needs CONFIG_CHECKPOINT_RESTORE).
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "../common/compat.h"
#include "../common/raw_syscall.h"

#if defined(__x86_64__)

#define THREADS 6
#define ROUNDS 400

// One call either way: even rounds through syscall() (-1 and errno), odd ones through the
// instruction (-errno); both give the kernel's convention back.
static long call(int raw, long nr, long a, long b) {
    if (raw) return raw6(nr, a, b, 0, 0, 0, 0);
    const long r = syscall(nr, a, b, 0L, 0L, 0L);
    return r == -1 ? -errno : r;
}

static int* get_address(int raw, int round) {
    int* address = (int*)1;
    const long r = call(raw, SYS_prctl, PR_GET_TID_ADDRESS, (long)&address);
    if (r != 0) COMPAT_FAIL("round %d: PR_GET_TID_ADDRESS returned %ld", round, r);
    return address;
}

static void* cycle(void* arg) {
    (void)arg;
    for (int round = 0; round < ROUNDS; round++) {
        const int raw = round & 1;
        int* const mine = get_address(raw, round);
        CHECK(mine != NULL, "round %d: the thread's address is null before it cleared it", round);
        const long tid = call(raw, SYS_set_tid_address, 0, 0);
        CHECK(tid > 0, "round %d: set_tid_address(NULL) returned %ld", round, tid);
        CHECK(get_address(raw, round) == NULL,
              "round %d: the address read back after set_tid_address(NULL) is not null", round);
        sched_yield();
        const long again = call(raw, SYS_set_tid_address, (long)mine, 0);
        CHECK(again > 0, "round %d: set_tid_address(%p) returned %ld", round, (void*)mine, again);
        int* const back = get_address(raw, round);
        CHECK(back == mine, "round %d: the address read back is %p, the thread set %p", round,
              (void*)back, (void*)mine);
    }
    return NULL;
}

static int exit_word = 1;  // the detached thread's clear-child-tid word

static void* set_and_exit(void* arg) {
    (void)arg;
    const long tid = syscall(SYS_set_tid_address, &exit_word);
    CHECK(tid > 0, "set_tid_address(&word) returned %ld", tid);
    return NULL;  // the thread ends: the word becomes 0 and main wakes
}

int main(void) {
    compat_start("tid_address");
    int* probe;
    if (prctl(PR_GET_TID_ADDRESS, &probe) != 0 && errno == EINVAL) {
        printf("skip tid_address: the kernel has no PR_GET_TID_ADDRESS\n");
        return 77;
    }
    CHECK_ERRNO(prctl(PR_GET_TID_ADDRESS, NULL), EFAULT);
    CHECK_EQ(raw6(SYS_prctl, PR_GET_TID_ADDRESS, 0, 0, 0, 0, 0), -EFAULT);

    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++) threads[i] = compat_spawn(cycle, NULL);
    for (int i = 0; i < THREADS; i++) compat_join(threads[i]);

    pthread_attr_t attr;
    CHECK_RC(pthread_attr_init(&attr), 0);
    CHECK_RC(pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED), 0);
    pthread_t t;
    CHECK_RC(pthread_create(&t, &attr, set_and_exit, NULL), 0);
    CHECK_RC(pthread_attr_destroy(&attr), 0);
    // Woken by the thread's end only: the word is 1 until then, so the wait does not return
    // early (EAGAIN once it is 0; EINTR cannot come, no handler is installed). alarm(30) from
    // compat_start bounds a lost wake-up.
    while (atomic_load((atomic_int*)&exit_word) != 0) {
        const long r = syscall(SYS_futex, &exit_word, FUTEX_WAIT, 1, NULL, NULL, 0);
        CHECK(r == 0 || errno == EAGAIN, "futex wait on the word: %s", strerror(errno));
    }
    return compat_ok();
}

#else
int main(void) {
    compat_start("tid_address");
    printf("skip tid_address: the inline syscall helper is written for x86-64 only\n");
    return 77;
}
#endif
