/* class_exclusive: a plain pthread program for the exclusive-class end-to-end test
 * (class_rules_e2e.sh exclusive). Under arbrun, gettid() returns the kernel tid of the carrier
 * running the calling user thread, so "nothing else ran on the exclusive thread's carrier" can be
 * checked from inside: every thread records the tids it saw, and none of the exclusive thread's
 * may appear in another thread's set.
 *
 * main creates dispatch_loop (creation index 0), which marks itself ready and then loops (spin,
 * yield, short sleeps) until the workers are done; after it is ready main creates six crunch
 * workers (indexes 1-6: more runnable threads than cores; they yield, sleep, and contend on a
 * mutex) and joins them. With argument "named", dispatch_loop first names itself "dispatch" and
 * yields (a name: rule's class applies at its next switch) before it marks itself ready. Only tids
 * seen after it is ready are recorded. It prints
 *   exclusive thread ran on N carrier(s), M of them also ran other threads
 *   ok class_exclusive
 * and the test script decides what N and M must be. Natively (no arbrun) the numbers mean
 * nothing, but the program still runs. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define MAX_TIDS 64
#define WORKERS 6
#define ITERATIONS 20000

/* The distinct tids one thread saw; written only by that thread, read by main after joining it. */
struct tidset {
    int n;
    pid_t tids[MAX_TIDS];
};

static void note(struct tidset* set, pid_t tid) {
    for (int i = 0; i < set->n; ++i) {
        if (set->tids[i] == tid) return;
    }
    if (set->n < MAX_TIDS) set->tids[set->n++] = tid;
}

static int contains(const struct tidset* set, pid_t tid) {
    for (int i = 0; i < set->n; ++i) {
        if (set->tids[i] == tid) return 1;
    }
    return 0;
}

static atomic_int exclusive_ready, workers_done;
static int named;
static struct tidset exclusive_tids, main_tids, worker_tids[WORKERS];
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long shared_counter;

static void pause_briefly(long ns) {
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
}

static unsigned long spin(unsigned long x, int rounds) {
    for (int i = 0; i < rounds; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        __asm__ volatile("" : "+r"(x));
    }
    return x;
}

static void* dispatch_loop(void* arg) {
    (void)arg;
    if (named) {
        pthread_setname_np(pthread_self(), "dispatch");
        sched_yield(); /* its next switch: the name's class takes effect */
    }
    note(&exclusive_tids, gettid());
    atomic_store(&exclusive_ready, 1);
    unsigned long x = 88172645463325252ul;
    for (int i = 0; !atomic_load(&workers_done); ++i) {
        note(&exclusive_tids, gettid());
        x = spin(x, 200);
        if (i % 8 == 0) {
            pause_briefly(50000); /* parks: its core idles meanwhile */
        } else {
            sched_yield();
        }
    }
    note(&exclusive_tids, gettid());
    return (void*)x;
}

static void* crunch(void* arg) {
    struct tidset* seen = arg;
    unsigned long x = (unsigned long)arg | 1;
    for (int i = 0; i < ITERATIONS; ++i) {
        note(seen, gettid());
        x = spin(x, 500);
        if (i % 10 == 0) {
            pthread_mutex_lock(&shared_lock);
            ++shared_counter;
            pthread_mutex_unlock(&shared_lock);
        }
        if (i % 97 == 0) {
            pause_briefly(20000);
        } else {
            sched_yield();
        }
    }
    note(seen, gettid());
    return (void*)x;
}

int main(int argc, char** argv) {
    named = argc > 1 && strcmp(argv[1], "named") == 0;
    pthread_t exclusive, workers[WORKERS];
    if (pthread_create(&exclusive, NULL, dispatch_loop, NULL) != 0) return 1;
    while (!atomic_load(&exclusive_ready)) sched_yield();
    note(&main_tids, gettid());
    for (int i = 0; i < WORKERS; ++i) {
        if (pthread_create(&workers[i], NULL, crunch, &worker_tids[i]) != 0) return 1;
    }
    note(&main_tids, gettid());
    for (int i = 0; i < WORKERS; ++i) {
        if (pthread_join(workers[i], NULL) != 0) return 1;
        note(&main_tids, gettid());
    }
    atomic_store(&workers_done, 1);
    if (pthread_join(exclusive, NULL) != 0) return 1;
    if (shared_counter != WORKERS * (ITERATIONS / 10)) {
        fprintf(stderr, "class_exclusive: counter %lu\n", shared_counter);
        return 1;
    }
    int shared = 0;
    for (int i = 0; i < exclusive_tids.n; ++i) {
        const pid_t tid = exclusive_tids.tids[i];
        int elsewhere = contains(&main_tids, tid);
        for (int w = 0; w < WORKERS; ++w) elsewhere |= contains(&worker_tids[w], tid);
        shared += elsewhere;
    }
    printf("exclusive thread ran on %d carrier(s), %d of them also ran other threads\n",
           exclusive_tids.n, shared);
    printf("ok class_exclusive\n");
    return 0;
}
