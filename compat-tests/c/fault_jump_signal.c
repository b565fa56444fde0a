// fault_jump_signal: a thread that loops on fault -> SIGSEGV handler -> siglongjmp (stress-ng's
// sigsegv stressor, guard-page probes) still takes a signal sent to the process: natively it is
// delivered when siglongjmp restores the saved mask, or at the next return from the kernel. The
// program has one thread, as stress-ng's stressor has: each of ROUNDS rounds arms a one-shot
// ITIMER_REAL of 1 ms and installs a SIGSEGV handler and makes a write fault on a read-only page
// over and over until the SIGALRM
// handler's flag is set, which must happen within COMPAT_LONG_MS (compat_start's own alarm is
// replaced by the timer; the deadline check stands in for it).
#include <setjmp.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/time.h>

#include "../common/compat.h"

#define ROUNDS 20

static sigjmp_buf env;
static volatile sig_atomic_t alarm_seen;
static atomic_int faults;
static char* page;

static void on_segv(int sig) {
    (void)sig;
    atomic_fetch_add(&faults, 1);
    siglongjmp(env, 1);
}

static void on_alarm(int sig) {
    (void)sig;
    alarm_seen = 1;
}

int main(void) {
    compat_start("fault_jump_signal");
    page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(page != MAP_FAILED, "mmap: %s", strerror(errno));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_segv;
    sa.sa_flags = SA_NODEFER;
    CHECK_SYS(sigaction(SIGSEGV, &sa, NULL));
    sa.sa_handler = on_alarm;
    sa.sa_flags = 0;
    CHECK_SYS(sigaction(SIGALRM, &sa, NULL));  // replaces compat_start's hang alarm
    for (int r = 0; r < ROUNDS; r++) {
        alarm_seen = 0;
        const int64_t end = compat_now_ns(CLOCK_MONOTONIC) + COMPAT_LONG_MS * 1000000LL;
        const struct itimerval once = {{0, 0}, {0, 1000}};
        CHECK_SYS(setitimer(ITIMER_REAL, &once, NULL));
        while (!alarm_seen) {
            // As stress-ng does, the handler is installed again each time: under arbrun that
            // keeps the thread inside the library for most of the loop.
            sa.sa_handler = on_segv;
            sa.sa_flags = SA_NODEFER;
            CHECK_SYS(sigaction(SIGSEGV, &sa, NULL));
            if (sigsetjmp(env, 1) == 0) {
                *(volatile char*)page = 1;  // faults; the handler jumps back here
                COMPAT_FAIL("the write to a read-only page did not fault");
            }
            // The clock only now and then: the loop must stay fault, handler, jump, as the
            // programs it stands for are (time in the program's own code lets an alert land).
            if ((atomic_load(&faults) & 4095) == 0 && compat_now_ns(CLOCK_MONOTONIC) > end)
                COMPAT_FAIL("round %d: SIGALRM not taken after %d faults in %d ms", r,
                            atomic_load(&faults), COMPAT_LONG_MS);
        }
    }
    CHECK_SYS(munmap(page, 4096));
    return compat_ok();
}
