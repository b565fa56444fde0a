// user_dispatch: a program that turns on syscall user dispatch for itself. Natively: with the
// selector at BLOCK, a raw system call raises SIGSYS (SYS_USER_DISPATCH, the call's number) for
// the program's own handler, which lets calls through again; then dispatch is turned off. Under
// arbrun, which uses syscall user dispatch on every kernel thread itself, turning it on fails
// with EINVAL (and arbrun says why on stderr): the program must go on either way, never be
// killed by a SIGSYS it did not ask for. Turning it off always succeeds.
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "../common/compat.h"
#include "../common/raw_syscall.h"

#if defined(__x86_64__) && defined(PR_SET_SYSCALL_USER_DISPATCH)

static volatile char selector = SYSCALL_DISPATCH_FILTER_ALLOW;
static volatile int trapped_nr = -1, trapped_code;

static void on_sigsys(int sig, siginfo_t* info, void* context) {
    (void)sig;
    (void)context;
    selector = SYSCALL_DISPATCH_FILTER_ALLOW;  // the rest of the handler's calls go through
    trapped_code = info->si_code;
    trapped_nr = info->si_syscall;
}

int main(void) {
    compat_start("user_dispatch");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigsys;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    CHECK_SYS(sigaction(SIGSYS, &sa, NULL));
    const int on = prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, 0, 0, &selector);
    if (on == 0) {
        selector = SYSCALL_DISPATCH_FILTER_BLOCK;
        raw6(SYS_getppid, 0, 0, 0, 0, 0, 0);  // trapped: not made
        CHECK_EQ(trapped_nr, SYS_getppid);
        CHECK_EQ(trapped_code, 2);  // SYS_USER_DISPATCH
    } else {
        CHECK(errno == EINVAL, "turning dispatch on failed with %s, not EINVAL", strerror(errno));
        printf("note: syscall user dispatch refused (expected under arbrun)\n");
    }
    CHECK_SYS(prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_OFF, 0, 0, 0));
    CHECK(raw6(SYS_getpid, 0, 0, 0, 0, 0, 0) == getpid(), "a raw getpid disagrees");
    CHECK(getppid() > 0, "getppid");
    return compat_ok();
}

#else
int main(void) {
    compat_start("user_dispatch");
    printf("skip user_dispatch: needs x86-64 and PR_SET_SYSCALL_USER_DISPATCH\n");
    return 77;
}
#endif
