// raw_signal_calls: the signal system calls a program makes with its own `syscall` instruction
// (hand-written wrappers, runtimes without libc): rt_sigpending, rt_sigtimedwait, rt_sigsuspend,
// pause and sigaltstack must see and change the same signal state as the libc calls do.
// - main blocks SIGUSR1 and SIGUSR2 (SIGUSR2 has a handler); a kill of SIGUSR1 shows in the raw
//   pending set, and a raw rt_sigtimedwait takes it (SI_USER, the sender's pid); with a zero
//   timeout and nothing pending it fails with EAGAIN, and a wrong set size with EINVAL;
// - a worker waits in a raw rt_sigtimedwait without timeout, ROUNDS times, for a SIGUSR1 sent to
//   the process or to it;
// - a pending SIGUSR2 runs its handler in a raw rt_sigsuspend that unblocks it (EINTR);
// - a worker in a raw pause returns EINTR once its handler ran (main sends until it did);
// - a raw sigaltstack sets the stack that libc's sigaltstack reads back, and the other way round.
#include <stdatomic.h>
#include <sys/syscall.h>

#include "../common/compat.h"
#include "../common/compat_wait.h"
#include "../common/raw_syscall.h"

#if defined(__x86_64__)

#define ROUNDS 100

static atomic_int handled, announced, done_rounds, paused_out;

static void on_usr2(int sig) {
    (void)sig;
    atomic_fetch_add(&handled, 1);
}

static uint64_t bit(int sig) {
    return 1ULL << (sig - 1);
}

static void* waiter(void* arg) {
    (void)arg;
    const uint64_t set = bit(SIGUSR1);
    for (int r = 0; r < ROUNDS; r++) {
        atomic_store(&announced, r + 1);
        siginfo_t info;
        const long sig = raw6(SYS_rt_sigtimedwait, (long)&set, (long)&info, 0, 8, 0, 0);
        CHECK(sig == SIGUSR1, "round %d: raw rt_sigtimedwait returned %ld", r, sig);
        atomic_store(&done_rounds, r + 1);
    }
    return NULL;
}

static void* pauser(void* arg) {
    (void)arg;
    sigset_t usr2;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    CHECK_RC(pthread_sigmask(SIG_UNBLOCK, &usr2, NULL), 0);
    atomic_store(&announced, 1);
    const long r = raw6(SYS_pause, 0, 0, 0, 0, 0, 0);
    CHECK(r == -EINTR, "raw pause returned %ld", r);
    atomic_store(&paused_out, 1);
    return NULL;
}

int main(void) {
    compat_start("raw_signal_calls");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr2;
    sigemptyset(&sa.sa_mask);
    CHECK_SYS(sigaction(SIGUSR2, &sa, NULL));
    sigset_t both;
    sigemptyset(&both);
    sigaddset(&both, SIGUSR1);
    sigaddset(&both, SIGUSR2);
    CHECK_RC(pthread_sigmask(SIG_BLOCK, &both, NULL), 0);

    // Pending, taken, timed out, bad size.
    CHECK_SYS(kill(getpid(), SIGUSR1));
    const int64_t end = compat_now_ns(CLOCK_MONOTONIC) + COMPAT_LONG_MS * 1000000LL;
    for (;;) {
        uint64_t pending = 0;
        CHECK_EQ(raw6(SYS_rt_sigpending, (long)&pending, 8, 0, 0, 0, 0), 0);
        if (pending & bit(SIGUSR1)) break;
        CHECK(compat_now_ns(CLOCK_MONOTONIC) < end, "SIGUSR1 never showed in rt_sigpending");
        sched_yield();
    }
    const uint64_t usr1 = bit(SIGUSR1);
    siginfo_t info;
    memset(&info, 0, sizeof info);
    CHECK_EQ(raw6(SYS_rt_sigtimedwait, (long)&usr1, (long)&info, 0, 8, 0, 0), SIGUSR1);
    CHECK_EQ(info.si_code, SI_USER);
    CHECK_EQ(info.si_pid, getpid());
    const struct timespec zero = {0, 0};
    CHECK_EQ(raw6(SYS_rt_sigtimedwait, (long)&usr1, 0, (long)&zero, 8, 0, 0), -EAGAIN);
    CHECK_EQ(raw6(SYS_rt_sigtimedwait, (long)&usr1, 0, (long)&zero, 4, 0, 0), -EINVAL);
    uint64_t pending = ~0ULL;
    CHECK_EQ(raw6(SYS_rt_sigpending, (long)&pending, 8, 0, 0, 0, 0), 0);
    CHECK(!(pending & bit(SIGUSR1)), "SIGUSR1 still pending after it was taken");

    // A worker waiting in the raw call.
    pthread_t t = compat_spawn(waiter, NULL);
    for (int r = 0; r < ROUNDS; r++) {
        compat_wait_at_least(&announced, r + 1, "waiter in rt_sigtimedwait");
        if (r % 2 == 0) {
            CHECK_SYS(kill(getpid(), SIGUSR1));
        } else {
            CHECK_RC(pthread_kill(t, SIGUSR1), 0);
        }
        compat_wait_at_least(&done_rounds, r + 1, "waiter took the signal");
    }
    compat_join(t);

    // rt_sigsuspend with SIGUSR2 pending.
    CHECK_SYS(kill(getpid(), SIGUSR2));
    const uint64_t only_usr1 = bit(SIGUSR1);
    CHECK_EQ(raw6(SYS_rt_sigsuspend, (long)&only_usr1, 8, 0, 0, 0, 0), -EINTR);
    CHECK_EQ(atomic_load(&handled), 1);

    // pause in a worker.
    atomic_store(&announced, 0);
    t = compat_spawn(pauser, NULL);
    compat_wait_at_least(&announced, 1, "pauser started");
    compat_signal_until(t, SIGUSR2, &paused_out, 1, "the return of the raw pause");
    compat_join(t);

    // sigaltstack both ways.
    static char area[1 << 16];
    stack_t ss = {.ss_sp = area, .ss_size = sizeof area, .ss_flags = 0}, old;
    CHECK_EQ(raw6(SYS_sigaltstack, (long)&ss, 0, 0, 0, 0, 0), 0);
    CHECK_SYS(sigaltstack(NULL, &old));
    CHECK(old.ss_sp == area && old.ss_size == sizeof area && old.ss_flags == 0,
          "libc reads back %p/%zu/%d after the raw call", old.ss_sp, old.ss_size, old.ss_flags);
    ss.ss_flags = SS_DISABLE;
    CHECK_SYS(sigaltstack(&ss, NULL));
    memset(&old, 0, sizeof old);
    CHECK_EQ(raw6(SYS_sigaltstack, 0, (long)&old, 0, 0, 0, 0), 0);
    CHECK(old.ss_flags == SS_DISABLE, "the raw call reads flags %d after libc disabled it",
          old.ss_flags);
    return compat_ok();
}

#else
int main(void) {
    compat_start("raw_signal_calls");
    printf("skip raw_signal_calls: the inline syscall helper is written for x86-64 only\n");
    return 77;
}
#endif
