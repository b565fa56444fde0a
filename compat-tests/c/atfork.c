// atfork: pthread_atfork handlers — prepare handlers run in reverse order of registration,
// parent and child handlers in registration order, each exactly once per fork, in the forking
// thread; the classic use (prepare locks a mutex, parent/child unlock it) keeps a mutex that other
// threads hammer consistent in the child; fork from a non-main thread.
#include <sys/wait.h>

#include "../common/compat.h"

static char trace[64];
static int ntrace;
static pthread_mutex_t guarded = PTHREAD_MUTEX_INITIALIZER;
static long guarded_value;
static volatile int stop;

static void rec(char ch) {
    trace[ntrace++] = ch;
}
static void p1(void) {
    rec('a');
}
static void p2(void) {
    rec('b');
}
static void p3(void) {
    rec('c');
}
static void pa1(void) {
    rec('1');
}
static void pa2(void) {
    rec('2');
}
static void pa3(void) {
    rec('3');
}
static void ch1(void) {
    rec('x');
}
static void ch2(void) {
    rec('y');
}
static void ch3(void) {
    rec('z');
}
static void lock_prepare(void) {
    pthread_mutex_lock(&guarded);
}
static void lock_release(void) {
    pthread_mutex_unlock(&guarded);
}

static void* hammer(void* arg) {
    (void)arg;
    while (!stop) {
        pthread_mutex_lock(&guarded);
        guarded_value++;
        guarded_value--;
        pthread_mutex_unlock(&guarded);
    }
    return NULL;
}

// Forks, checks the trace in parent and child; returns 0 on success.
static void* fork_and_check(void* arg) {
    (void)arg;
    ntrace = 0;
    fflush(stdout);
    pid_t pid = fork();
    CHECK_SYS(pid);
    if (pid == 0) {
        trace[ntrace] = 0;
        // Child: prepare handlers c b a (reverse), then child handlers x y z (registration order).
        if (strcmp(trace, "cbaxyz") != 0) _exit(1);
        // The guarded mutex was released by the child handler and its value is consistent.
        if (pthread_mutex_trylock(&guarded) != 0) _exit(2);
        if (guarded_value != 0) _exit(3);
        pthread_mutex_unlock(&guarded);
        _exit(0);
    }
    trace[ntrace] = 0;
    CHECK(strcmp(trace, "cba123") == 0, "parent trace '%s', expected 'cba123'", trace);
    int status;
    CHECK_SYS(waitpid(pid, &status, 0));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed: status 0x%x", status);
    return NULL;
}

int main(void) {
    compat_start("atfork");
    // The lock handlers are registered last: their prepare runs first (the mutex is taken before
    // the tracing handlers run) and their parent/child handlers run last.
    CHECK_RC(pthread_atfork(p1, pa1, ch1), 0);
    CHECK_RC(pthread_atfork(p2, pa2, ch2), 0);
    CHECK_RC(pthread_atfork(p3, pa3, ch3), 0);
    CHECK_RC(pthread_atfork(NULL, NULL, NULL), 0);
    CHECK_RC(pthread_atfork(lock_prepare, lock_release, lock_release), 0);
    pthread_t h[3];
    for (int i = 0; i < 3; i++) h[i] = compat_spawn(hammer, NULL);
    for (int i = 0; i < 10; i++) fork_and_check(NULL);
    // Fork from another thread.
    pthread_t f = compat_spawn(fork_and_check, NULL);
    compat_join(f);
    stop = 1;
    for (int i = 0; i < 3; i++) compat_join(h[i]);
    return compat_ok();
}
