// altstack_longjmp: a handler running on the alternate signal stack siglongjmps back to the
// thread's own stack, built with _FORTIFY_SOURCE (siglongjmp is then __longjmp_chk, which kills a
// jump to a deeper frame unless it leaves the alternate stack). The thread's stack is placed
// below the alternate stack, so every jump goes to a lower address: natively fine, since it
// leaves the alternate stack. ROUNDS raises, each handled on the alternate stack and left by
// the jump.
#include <setjmp.h>
#include <sys/mman.h>

#include "../common/compat.h"

#define ROUNDS 200
#define REGION (256 * 1024)

static sigjmp_buf env;
static char* alt_low;
static volatile int on_alt, jumps;

static void on_usr1(int sig) {
    (void)sig;
    char here;
    on_alt = &here >= alt_low && &here < alt_low + REGION;
    siglongjmp(env, 1);
}

static void* worker(void* arg) {
    (void)arg;
    stack_t ss = {.ss_sp = alt_low, .ss_size = REGION, .ss_flags = 0};
    CHECK_SYS(sigaltstack(&ss, NULL));
    for (int r = 0; r < ROUNDS; r++) {
        on_alt = 0;
        if (sigsetjmp(env, 1) == 0) {
            CHECK_SYS(raise(SIGUSR1));
            COMPAT_FAIL("round %d: the handler did not jump", r);
        }
        CHECK(on_alt, "round %d: the handler did not run on the alternate stack", r);
        jumps++;
    }
    ss.ss_flags = SS_DISABLE;
    CHECK_SYS(sigaltstack(&ss, NULL));
    return NULL;
}

int main(void) {
    compat_start("altstack_longjmp");
    char* a = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char* b = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(a != MAP_FAILED && b != MAP_FAILED, "mmap: %s", strerror(errno));
    char* stack = a < b ? a : b;  // the thread's stack lies below its alternate stack
    alt_low = a < b ? b : a;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    CHECK_SYS(sigaction(SIGUSR1, &sa, NULL));
    pthread_attr_t attr;
    CHECK_RC(pthread_attr_init(&attr), 0);
    CHECK_RC(pthread_attr_setstack(&attr, stack, REGION), 0);
    pthread_t t;
    CHECK_RC(pthread_create(&t, &attr, worker, NULL), 0);
    compat_join(t);
    CHECK_RC(pthread_attr_destroy(&attr), 0);
    CHECK_EQ(jumps, ROUNDS);
    CHECK_SYS(munmap(a, REGION));
    CHECK_SYS(munmap(b, REGION));
    return compat_ok();
}
