// sigaltstack: alternate signal stacks are per thread — each thread installs its own, a
// SA_ONSTACK handler for a signal sent to that thread runs on that thread's stack (a local of
// the handler lies inside it, and sigaltstack reports SS_ONSTACK there); threads start with no
// alternate stack; main's setting is not disturbed by the threads.
#include "../common/compat.h"

enum { N = 6, ALT_SIZE = 64 * 1024 };
static __thread char* my_alt;                   // this thread's alternate stack
static __thread volatile sig_atomic_t handled;  // set by the handler when its checks passed

static void on_usr1(int sig) {
    (void)sig;
    char local;
    CHECK(&local >= my_alt && &local < my_alt + ALT_SIZE, "handler not on this thread's alt stack");
    stack_t cur;
    CHECK_SYS(sigaltstack(NULL, &cur));
    CHECK(cur.ss_flags & SS_ONSTACK, "SS_ONSTACK not reported inside the handler");
    CHECK(cur.ss_sp == my_alt, "sigaltstack reports another thread's stack");
    handled = 1;
}

static pthread_barrier_t b;

static void* worker(void* arg) {
    (void)arg;
    stack_t cur;
    CHECK_SYS(sigaltstack(NULL, &cur));
    CHECK(cur.ss_flags & SS_DISABLE, "new thread starts with an alternate stack");
    my_alt = (char*)malloc(ALT_SIZE);
    stack_t ss = {.ss_sp = my_alt, .ss_flags = 0, .ss_size = ALT_SIZE};
    CHECK_SYS(sigaltstack(&ss, NULL));
    pthread_barrier_wait(&b);  // every thread has installed its own before anyone signals
    for (int i = 0; i < 20; i++) {
        handled = 0;
        CHECK_RC(pthread_kill(pthread_self(), SIGUSR1), 0);
        CHECK(handled, "handler did not run on this thread");
    }
    CHECK_SYS(sigaltstack(NULL, &cur));
    CHECK(cur.ss_sp == my_alt && !(cur.ss_flags & SS_ONSTACK), "alt stack changed");
    ss.ss_flags = SS_DISABLE;
    CHECK_SYS(sigaltstack(&ss, NULL));
    free(my_alt);
    return NULL;
}

int main(void) {
    compat_start("sigaltstack");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    CHECK_SYS(sigaction(SIGUSR1, &sa, NULL));
    // Main's own alternate stack.
    my_alt = (char*)malloc(ALT_SIZE);
    stack_t ss = {.ss_sp = my_alt, .ss_flags = 0, .ss_size = ALT_SIZE};
    CHECK_SYS(sigaltstack(&ss, NULL));
    // Too small a stack is ENOMEM.
    stack_t tiny = {.ss_sp = my_alt, .ss_flags = 0, .ss_size = 16};
    CHECK_ERRNO(sigaltstack(&tiny, NULL), ENOMEM);

    CHECK_RC(pthread_barrier_init(&b, NULL, N + 1), 0);
    pthread_t t[N];
    for (int i = 0; i < N; i++) t[i] = compat_spawn(worker, NULL);
    pthread_barrier_wait(&b);
    handled = 0;
    CHECK_RC(pthread_kill(pthread_self(), SIGUSR1), 0);
    CHECK(handled, "main's handler did not run");
    for (int i = 0; i < N; i++) compat_join(t[i]);
    stack_t cur;
    CHECK_SYS(sigaltstack(NULL, &cur));
    CHECK(cur.ss_sp == my_alt && cur.ss_size == ALT_SIZE, "main's alt stack disturbed");
    return compat_ok();
}
