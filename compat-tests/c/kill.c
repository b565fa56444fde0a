// kill: pthread_kill — signal 0 to a live thread is 0; an invalid signal number is EINVAL; a
// signal sent to a specific thread runs its handler in that thread (checked with pthread_self in
// the handler) even when other threads could take it; pthread_sigqueue delivers the value.
#include "../common/compat.h"

static pthread_barrier_t b;
static volatile sig_atomic_t got_usr1;
static pthread_t handler_thread;  // written by the handler only
static volatile int sigqueue_value;
static pthread_t targets[4];

static void on_usr1(int sig) {
    (void)sig;
    handler_thread = pthread_self();
    got_usr1 = 1;
}

static void on_usr2(int sig, siginfo_t* si, void* uc) {
    (void)sig;
    (void)uc;
    sigqueue_value = si->si_value.sival_int;
    handler_thread = pthread_self();
}

// Parks on the barrier until main has signalled it; the handler has run by the time a
// pthread_kill'ed thread returns from a blocking call or runs its next instruction.
static void* target(void* arg) {
    (void)arg;
    pthread_barrier_wait(&b);  // live
    pthread_barrier_wait(&b);  // main has sent its signal: wait for the handler to have run
    while (!got_usr1 && !sigqueue_value) usleep(1000);
    pthread_barrier_wait(&b);
    return NULL;
}

int main(void) {
    compat_start("kill");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    CHECK_SYS(sigaction(SIGUSR1, &sa, NULL));
    sa.sa_handler = NULL;
    sa.sa_sigaction = on_usr2;
    sa.sa_flags = SA_SIGINFO;
    CHECK_SYS(sigaction(SIGUSR2, &sa, NULL));

    CHECK_RC(pthread_barrier_init(&b, NULL, 5), 0);
    for (int i = 0; i < 4; i++) targets[i] = compat_spawn(target, NULL);
    pthread_barrier_wait(&b);
    for (int i = 0; i < 4; i++) {
        CHECK_RC(pthread_kill(targets[i], 0), 0);
        CHECK_RC(pthread_kill(targets[i], -1), EINVAL);
        CHECK_RC(pthread_kill(targets[i], 100000), EINVAL);
    }
    CHECK_RC(pthread_kill(pthread_self(), 0), 0);

    // Signal thread 2 only.
    CHECK_RC(pthread_kill(targets[2], SIGUSR1), 0);
    pthread_barrier_wait(&b);
    pthread_barrier_wait(&b);
    CHECK(got_usr1, "SIGUSR1 handler did not run");
    CHECK(pthread_equal(handler_thread, targets[2]), "SIGUSR1 handler ran in the wrong thread");
    for (int i = 0; i < 4; i++) compat_join(targets[i]);

    // pthread_sigqueue with a value, to a fresh thread.
    got_usr1 = 0;
    CHECK_RC(pthread_barrier_destroy(&b), 0);
    CHECK_RC(pthread_barrier_init(&b, NULL, 2), 0);
    pthread_t t = compat_spawn(target, NULL);
    pthread_barrier_wait(&b);
    union sigval v;
    v.sival_int = 4242;
    CHECK_RC(pthread_sigqueue(t, SIGUSR2, v), 0);
    pthread_barrier_wait(&b);
    pthread_barrier_wait(&b);
    CHECK_EQ(sigqueue_value, 4242);
    CHECK(pthread_equal(handler_thread, t), "SIGUSR2 handler ran in the wrong thread");
    compat_join(t);

    // Signal to self runs the handler before pthread_kill returns.
    got_usr1 = 0;
    CHECK_RC(pthread_kill(pthread_self(), SIGUSR1), 0);
    CHECK(got_usr1, "self-directed signal not delivered before pthread_kill returned");
    CHECK(pthread_equal(handler_thread, pthread_self()), "self signal handled elsewhere");
    return compat_ok();
}
