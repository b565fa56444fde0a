// pshared_fork: PTHREAD_PROCESS_SHARED objects in MAP_SHARED memory used by a parent and a forked
// child — a mutex + condvar ping-pong (1,000 rounds), a process-shared unnamed semaphore, a
// process-shared barrier, and raw shared (non-private) futexes between the processes: WAIT/WAKE,
// WAIT_BITSET/WAKE_BITSET, and a CMP_REQUEUE of the child's waiter to another word that the
// parent then wakes; the parent runs a helper thread meanwhile. The child reports through its exit
// status.
#include <linux/futex.h>
#include <semaphore.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../common/compat.h"

struct shared {
    pthread_mutex_t m;
    pthread_cond_t c;
    pthread_barrier_t b;
    sem_t sem;
    int turn;
    uint32_t fword;
    uint32_t bword;       // WAIT_BITSET/WAKE_BITSET
    uint32_t qfrom, qto;  // CMP_REQUEUE from qfrom (set to 1 after it) to qto
    long counter;
};

enum { ROUNDS = 1000 };

static int child_main(struct shared* s) {
    for (int i = 0; i < ROUNDS; i++) {
        if (pthread_mutex_lock(&s->m)) return 10;
        while (s->turn != 1) pthread_cond_wait(&s->c, &s->m);
        s->counter++;
        s->turn = 0;
        pthread_cond_broadcast(&s->c);
        pthread_mutex_unlock(&s->m);
    }
    for (int i = 0; i < 100; i++)
        if (sem_wait(&s->sem)) return 11;
    int rc = pthread_barrier_wait(&s->b);
    if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD) return 12;
    // Raw shared futex: wait until the parent sets fword.
    while (__atomic_load_n(&s->fword, __ATOMIC_ACQUIRE) == 0)
        syscall(SYS_futex, &s->fword, FUTEX_WAIT, 0, NULL, NULL, 0);
    // Bitset: wait on bit 1 until the parent sets bword (its wake names bits 1 and 3).
    while (__atomic_load_n(&s->bword, __ATOMIC_ACQUIRE) == 0)
        syscall(SYS_futex, &s->bword, FUTEX_WAIT_BITSET, 0, NULL, NULL, 0x2);
    // Requeue: wait on qfrom until it is set; the parent moves us to qto and wakes qto.
    while (__atomic_load_n(&s->qfrom, __ATOMIC_ACQUIRE) == 0)
        syscall(SYS_futex, &s->qfrom, FUTEX_WAIT, 0, NULL, NULL, 0);
    return 0;
}

static void* helper(void* arg) {
    volatile long* x = (volatile long*)arg;
    for (int i = 0; i < 100000; i++) *x += 1;
    return NULL;
}

int main(void) {
    compat_start("pshared_fork");
    struct shared* s = (struct shared*)mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE,
                                            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(s != MAP_FAILED, "mmap");
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    CHECK_RC(pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED), 0);
    CHECK_RC(pthread_mutex_init(&s->m, &ma), 0);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    CHECK_RC(pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED), 0);
    CHECK_RC(pthread_cond_init(&s->c, &ca), 0);
    pthread_barrierattr_t ba;
    pthread_barrierattr_init(&ba);
    CHECK_RC(pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED), 0);
    CHECK_RC(pthread_barrier_init(&s->b, &ba, 2), 0);
    CHECK_SYS(sem_init(&s->sem, 1, 0));

    long hv = 0;
    pthread_t h = compat_spawn(helper, &hv);
    fflush(stdout);
    pid_t pid = fork();
    CHECK_SYS(pid);
    if (pid == 0) _exit(child_main(s));

    for (int i = 0; i < ROUNDS; i++) {
        CHECK_RC(pthread_mutex_lock(&s->m), 0);
        s->turn = 1;
        pthread_cond_broadcast(&s->c);
        while (s->turn != 0) pthread_cond_wait(&s->c, &s->m);
        CHECK_RC(pthread_mutex_unlock(&s->m), 0);
    }
    for (int i = 0; i < 100; i++) CHECK_SYS(sem_post(&s->sem));
    int rc = pthread_barrier_wait(&s->b);
    CHECK(rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD, "barrier_wait %d", rc);
    __atomic_store_n(&s->fword, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, &s->fword, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
    __atomic_store_n(&s->bword, 1, __ATOMIC_RELEASE);
    long woken = syscall(SYS_futex, &s->bword, FUTEX_WAKE_BITSET, INT32_MAX, NULL, NULL, 0xa);
    CHECK(woken == 0 || woken == 1, "FUTEX_WAKE_BITSET returned %ld", woken);
    // Requeue: move the child's waiter (once it waits in qfrom's queue) to qto, then wake qto.
    long moved;
    while ((moved = syscall(SYS_futex, &s->qfrom, FUTEX_CMP_REQUEUE, 0, (void*)(long)INT32_MAX,
                            &s->qto, 0)) == 0) {
        int early;
        CHECK(waitpid(pid, &early, WNOHANG) == 0, "child ended early, status 0x%x", early);
        sched_yield();
    }
    CHECK(moved == 1, "FUTEX_CMP_REQUEUE returned %ld (errno %d)", moved, errno);
    __atomic_store_n(&s->qfrom, 1, __ATOMIC_RELEASE);
    woken = syscall(SYS_futex, &s->qto, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
    CHECK(woken == 1, "FUTEX_WAKE of the requeued waiter woke %ld", woken);

    int status = 0;
    CHECK_SYS(waitpid(pid, &status, 0));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);
    CHECK_EQ(s->counter, ROUNDS);
    compat_join(h);
    CHECK_EQ(hv, 100000);
    return compat_ok();
}
