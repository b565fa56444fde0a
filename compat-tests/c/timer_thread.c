// timer_thread: POSIX timers whose notification creates threads (SIGEV_THREAD) — a periodic 5 ms
// timer's callback runs in a thread other than main and posts a semaphore; main waits for 10
// expirations with sem_timedwait; timer_delete stops it; a one-shot timer fires exactly once;
// a SIGEV_SIGNAL timer delivers to a thread waiting in sigwaitinfo.
#include <semaphore.h>

#include "../common/compat.h"

static sem_t ticks, oneshot;  // posted by the callbacks of the periodic and one-shot timers
static pthread_t main_thread;
static int in_main_thread;  // set if a callback ran in main (must not happen)

// Timer callback: posts the semaphore the timer was created with.
static void on_tick(union sigval v) {
    if (pthread_equal(pthread_self(), main_thread)) in_main_thread = 1;
    sem_post((sem_t*)v.sival_ptr);
}

static void* signal_waiter(void* arg) {
    sigset_t* s = (sigset_t*)arg;
    siginfo_t si;
    struct timespec to = {COMPAT_LONG_MS / 1000, 0};
    int sig = sigtimedwait(s, &si, &to);
    CHECK(sig == SIGRTMIN + 1, "sigtimedwait returned %d (errno %d)", sig, errno);
    CHECK_EQ(si.si_value.sival_int, 31337);
    return NULL;
}

int main(void) {
    compat_start("timer_thread");
    main_thread = pthread_self();
    CHECK_SYS(sem_init(&ticks, 0, 0));
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD;
    sev.sigev_notify_function = on_tick;
    sev.sigev_value.sival_ptr = &ticks;
    timer_t tid;
    CHECK_SYS(timer_create(CLOCK_MONOTONIC, &sev, &tid));
    struct itimerspec its = {{0, 5000000}, {0, 5000000}};
    CHECK_SYS(timer_settime(tid, 0, &its, NULL));
    for (int i = 0; i < 10; i++) {
        struct timespec dl = compat_deadline_ms(CLOCK_REALTIME, COMPAT_LONG_MS);
        CHECK_SYS(sem_timedwait(&ticks, &dl));
    }
    CHECK_SYS(timer_delete(tid));
    CHECK(!in_main_thread, "SIGEV_THREAD callback ran in the main thread");

    // One-shot: exactly one expiration (its own semaphore: callbacks of the deleted periodic
    // timer may still be in flight).
    CHECK_SYS(sem_init(&oneshot, 0, 0));
    sev.sigev_value.sival_ptr = &oneshot;
    CHECK_SYS(timer_create(CLOCK_REALTIME, &sev, &tid));
    struct itimerspec once = {{0, 0}, {0, 10000000}};
    CHECK_SYS(timer_settime(tid, 0, &once, NULL));
    struct timespec dl = compat_deadline_ms(CLOCK_REALTIME, COMPAT_LONG_MS);
    CHECK_SYS(sem_timedwait(&oneshot, &dl));
    usleep(50000);
    int extra = -1;
    CHECK_SYS(sem_getvalue(&oneshot, &extra));
    CHECK_EQ(extra, 0);
    CHECK_SYS(timer_delete(tid));

    // SIGEV_SIGNAL to a sigwaitinfo thread (signal blocked everywhere).
    static sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGRTMIN + 1);
    CHECK_RC(pthread_sigmask(SIG_BLOCK, &s, NULL), 0);
    pthread_t w = compat_spawn(signal_waiter, &s);
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = SIGRTMIN + 1;
    sev.sigev_value.sival_int = 31337;
    CHECK_SYS(timer_create(CLOCK_MONOTONIC, &sev, &tid));
    CHECK_SYS(timer_settime(tid, 0, &once, NULL));
    compat_join(w);
    CHECK_SYS(timer_delete(tid));
    return compat_ok();
}
