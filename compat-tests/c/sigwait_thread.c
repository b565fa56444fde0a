// sigwait_thread: the classic server pattern — every thread blocks SIGUSR1/SIGTERM-like signals
// and one dedicated thread collects process-directed signals (kill(getpid())) with sigwaitinfo.
// Every signal sent is received by that thread; none runs a handler.
#include "../common/compat.h"

enum { ROUNDS = 200 };
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int received;  // guarded by m

static void* collector(void* arg) {
    sigset_t* s = (sigset_t*)arg;
    pthread_t self = pthread_self();
    (void)self;
    for (int i = 0; i < ROUNDS; i++) {
        siginfo_t si;
        int sig = sigwaitinfo(s, &si);
        CHECK(sig == SIGUSR1, "sigwaitinfo returned %d (errno %d)", sig, errno);
        CHECK_EQ(si.si_pid, getpid());
        pthread_mutex_lock(&m);
        received++;
        pthread_cond_signal(&c);
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

static void on_usr1(int sig) {
    (void)sig;
    COMPAT_FAIL("handler ran for a signal every thread blocks");
}

// Workers compute while signals fly; they inherit the blocked mask.
static void* worker(void* arg) {
    volatile long* sum = (volatile long*)arg;
    for (long i = 0; i < 2000000; i++) *sum += i & 7;
    return NULL;
}

int main(void) {
    compat_start("sigwait_thread");
    signal(SIGUSR1, on_usr1);
    static sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR1);
    CHECK_RC(pthread_sigmask(SIG_BLOCK, &s, NULL), 0);
    pthread_t col = compat_spawn(collector, &s);
    long sums[3] = {0, 0, 0};
    pthread_t w[3];
    for (int i = 0; i < 3; i++) w[i] = compat_spawn(worker, &sums[i]);
    // Send one signal at a time and wait for its receipt (standard signals do not queue).
    for (int i = 0; i < ROUNDS; i++) {
        CHECK_SYS(kill(getpid(), SIGUSR1));
        pthread_mutex_lock(&m);
        struct timespec dl = compat_deadline_ms(CLOCK_REALTIME, COMPAT_LONG_MS);
        while (received < i + 1)
            CHECK(pthread_cond_timedwait(&c, &m, &dl) == 0, "signal %d not collected", i);
        pthread_mutex_unlock(&m);
    }
    compat_join(col);
    for (int i = 0; i < 3; i++) {
        compat_join(w[i]);
        CHECK_EQ(sums[i], 7000000);
    }
    return compat_ok();
}
