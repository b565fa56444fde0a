// task_queue: the facesim/bodytrack pattern — a pool of 6 workers serves a task queue (mutex +
// condvar); tasks spawn sub-tasks; the master waits for the "outstanding tasks == 0" condition
// per phase; workers exit with pthread_exit when told to. 40 phases; exact sums per phase.
#include "../common/compat.h"

enum { WORKERS = 6, PHASES = 40, ROOTS = 20, FANOUT = 4 };

struct task {
    int depth;
    long value;
};

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER, idle = PTHREAD_COND_INITIALIZER;
static struct task* q;  // guarded by m: stack of pending tasks
static int nq, capq;
static int outstanding;  // guarded by m: queued + running
static long phase_sum;   // guarded by m
static int quit;         // guarded by m

static void push_locked(struct task t) {
    if (nq == capq) {
        capq = capq ? capq * 2 : 64;
        q = (struct task*)realloc(q, (size_t)capq * sizeof *q);
    }
    q[nq++] = t;
    outstanding++;
    pthread_cond_signal(&work);
}

static void* worker(void* arg) {
    (void)arg;
    pthread_mutex_lock(&m);
    for (;;) {
        while (nq == 0 && !quit) pthread_cond_wait(&work, &m);
        if (quit) {
            pthread_mutex_unlock(&m);
            pthread_exit((void*)1);
        }
        struct task t = q[--nq];
        pthread_mutex_unlock(&m);
        long v = t.value * 3 + t.depth;  // "work"
        pthread_mutex_lock(&m);
        phase_sum += v;
        if (t.depth < 2)
            for (int k = 0; k < FANOUT; k++) push_locked((struct task){t.depth + 1, t.value + k});
        if (--outstanding == 0) pthread_cond_broadcast(&idle);
    }
}

// Expected sum of one root's tree.
static long tree_sum(int depth, long value) {
    long s = value * 3 + depth;
    if (depth < 2)
        for (int k = 0; k < FANOUT; k++) s += tree_sum(depth + 1, value + k);
    return s;
}

int main(void) {
    compat_start("task_queue");
    pthread_t t[WORKERS];
    for (int i = 0; i < WORKERS; i++) t[i] = compat_spawn(worker, NULL);
    for (int p = 0; p < PHASES; p++) {
        pthread_mutex_lock(&m);
        phase_sum = 0;
        long want = 0;
        for (int r = 0; r < ROOTS; r++) {
            push_locked((struct task){0, p * 100 + r});
            want += tree_sum(0, p * 100 + r);
        }
        while (outstanding > 0) pthread_cond_wait(&idle, &m);
        CHECK(phase_sum == want, "phase %d: sum %ld, expected %ld", p, phase_sum, want);
        pthread_mutex_unlock(&m);
    }
    pthread_mutex_lock(&m);
    quit = 1;
    pthread_cond_broadcast(&work);
    pthread_mutex_unlock(&m);
    for (int i = 0; i < WORKERS; i++) CHECK_EQ((intptr_t)compat_join(t[i]), 1);
    free(q);
    return compat_ok();
}
