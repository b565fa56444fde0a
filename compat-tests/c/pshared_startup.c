// pshared_startup: fio's job start-up. Process-shared mutex/condvar pairs and semaphores live in a
// MAP_SHARED mapping; main makes one thread at a time and waits for it with a deadline (a timed
// condvar wait on a CLOCK_MONOTONIC condvar, then a timed semaphore wait); each new thread
// announces itself and then waits, untimed, until all have started. Under arbrun these objects
// go to the real libc and block a kernel thread: the wait must not hold its core, or the new
// thread queued behind it never runs ("job startup hung?"). Each wait's deadline is far (10 s);
// the test fails if one expires.
#include <semaphore.h>
#include <sys/mman.h>

#include "../common/compat.h"

enum { JOBS = 6 };

struct shared {
    pthread_mutex_t lock;
    pthread_cond_t started_cond;  // signalled by each new thread (guarded by lock)
    pthread_cond_t go_cond;       // broadcast once every thread started (guarded by lock)
    int started;                  // guarded by lock
    int go;                       // guarded by lock
    sem_t announced;              // posted by each new thread after the condvar part
};

static struct shared* sh;

static void* job(void* arg) {
    (void)arg;
    pthread_mutex_lock(&sh->lock);
    sh->started++;
    pthread_cond_signal(&sh->started_cond);
    pthread_mutex_unlock(&sh->lock);
    CHECK_SYS(sem_post(&sh->announced));
    pthread_mutex_lock(&sh->lock);
    while (!sh->go) pthread_cond_wait(&sh->go_cond, &sh->lock);
    pthread_mutex_unlock(&sh->lock);
    return NULL;
}

static void init_shared(void) {
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(sh != MAP_FAILED, "mmap: %s", strerror(errno));
    pthread_mutexattr_t ma;
    pthread_condattr_t ca;
    CHECK_RC(pthread_mutexattr_init(&ma), 0);
    CHECK_RC(pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED), 0);
    CHECK_RC(pthread_mutex_init(&sh->lock, &ma), 0);
    CHECK_RC(pthread_condattr_init(&ca), 0);
    CHECK_RC(pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED), 0);
    CHECK_RC(pthread_condattr_setclock(&ca, CLOCK_MONOTONIC), 0);
    CHECK_RC(pthread_cond_init(&sh->started_cond, &ca), 0);
    CHECK_RC(pthread_cond_init(&sh->go_cond, &ca), 0);
    CHECK_SYS(sem_init(&sh->announced, 1, 0));
}

int main(void) {
    compat_start("pshared_startup");
    init_shared();
    pthread_t t[JOBS];
    for (int i = 0; i < JOBS; i++) {
        t[i] = compat_spawn(job, NULL);
        struct timespec deadline = compat_deadline_ms(CLOCK_MONOTONIC, 10000);
        pthread_mutex_lock(&sh->lock);
        int e = 0;
        while (sh->started <= i && e == 0)
            e = pthread_cond_timedwait(&sh->started_cond, &sh->lock, &deadline);
        CHECK(sh->started > i, "job %d did not start within 10 s (%s)", i, strerror(e));
        pthread_mutex_unlock(&sh->lock);
        struct timespec sem_deadline = compat_deadline_ms(CLOCK_REALTIME, 10000);
        while (sem_timedwait(&sh->announced, &sem_deadline) != 0)
            CHECK(errno == EINTR, "job %d: sem_timedwait: %s", i, strerror(errno));
    }
    pthread_mutex_lock(&sh->lock);
    sh->go = 1;
    pthread_cond_broadcast(&sh->go_cond);
    pthread_mutex_unlock(&sh->lock);
    for (int i = 0; i < JOBS; i++) compat_join(t[i]);
    CHECK_SYS(sem_destroy(&sh->announced));
    CHECK_SYS(munmap(sh, sizeof *sh));
    return compat_ok();
}
