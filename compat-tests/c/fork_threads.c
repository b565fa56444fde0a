// fork_threads: fork from a program with 4 running threads (blocked in a condvar, computing,
// sleeping) — only the forking thread exists in the child, which can create 8 threads, join
// them and exit with their result (mutexes other threads may hold at fork time are left alone:
// atfork covers that);
// 20 children in a row; the parent's threads are unaffected and waitpid reports each status.
#include <sys/wait.h>

#include "../common/compat.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int stop;  // guarded by m

static void* parked(void* arg) {
    (void)arg;
    pthread_mutex_lock(&m);
    while (!stop) pthread_cond_wait(&c, &m);
    pthread_mutex_unlock(&m);
    return NULL;
}

static void* busy(void* arg) {
    volatile long* x = (volatile long*)arg;
    for (;;) {
        pthread_mutex_lock(&m);
        int s = stop;
        pthread_mutex_unlock(&m);
        if (s) break;
        for (int i = 0; i < 1000; i++) *x += 1;
        usleep(100);
    }
    return NULL;
}

static void* square(void* arg) {
    intptr_t v = (intptr_t)arg;
    return (void*)(v * v);
}

// Runs in the child: creates and joins threads; returns an exit status.
static int child(int k) {
    pthread_t t[8];
    for (intptr_t i = 0; i < 8; i++)
        if (pthread_create(&t[i], NULL, square, (void*)(i + k)) != 0) return 101;
    long sum = 0;
    for (int i = 0; i < 8; i++) {
        void* r;
        if (pthread_join(t[i], &r) != 0) return 102;
        sum += (intptr_t)r;
    }
    return (int)(sum % 200);
}

int main(void) {
    compat_start("fork_threads");
    long counters[2] = {0, 0};
    pthread_t t[4];
    t[0] = compat_spawn(parked, NULL);
    t[1] = compat_spawn(parked, NULL);
    t[2] = compat_spawn(busy, &counters[0]);
    t[3] = compat_spawn(busy, &counters[1]);
    fflush(stdout);
    for (int k = 0; k < 20; k++) {
        pid_t pid = fork();
        CHECK_SYS(pid);
        if (pid == 0) _exit(child(k));
        int status;
        CHECK_SYS(waitpid(pid, &status, 0));
        long want = 0;
        for (int i = 0; i < 8; i++) want += (long)(i + k) * (i + k);
        CHECK(WIFEXITED(status), "child %d did not exit normally (status 0x%x)", k, status);
        CHECK_EQ(WEXITSTATUS(status), want % 200);
    }
    pthread_mutex_lock(&m);
    stop = 1;
    pthread_cond_broadcast(&c);
    pthread_mutex_unlock(&m);
    for (int i = 0; i < 4; i++) compat_join(t[i]);
    return compat_ok();
}
