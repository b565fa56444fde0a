// unwinder_loading: a C program starts without the unwinder (libgcc_s), as natively, and glibc
// loads it when a thread is first cancelled: the cancelled thread's cleanup handlers run, its
// mutex is re-acquired for them, and pthread_exit from deep inside a thread unwinds the same way.
// Under arbrun the preload library must neither bring libgcc_s in at start-up nor lose the
// unwinding it needs through its own frames (the condition wait below is arbrun's).
#include <string.h>

#include "../common/compat.h"

// Whether an object named `name` is mapped (a substring of a path in /proc/self/maps).
static int mapped(const char* name) {
    FILE* maps = fopen("/proc/self/maps", "r");
    CHECK(maps != NULL, "cannot open /proc/self/maps");
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof line, maps)) found = strstr(line, name) != NULL;
    fclose(maps);
    return found;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static int waiting;
static int cleanup_held_lock;

static void unlock_in_cleanup(void* arg) {
    (void)arg;
    // The wait re-acquired the mutex before the handlers run (POSIX): unlocking proves it.
    cleanup_held_lock = pthread_mutex_unlock(&lock) == 0;
}

static void* waiter(void* arg) {
    (void)arg;
    pthread_mutex_lock(&lock);
    waiting = 1;
    pthread_cleanup_push(unlock_in_cleanup, NULL);
    for (;;) pthread_cond_wait(&never, &lock);
    pthread_cleanup_pop(1);
    return NULL;
}

static int order[8];
static int norder;
static void record(void* v) {
    order[norder++] = (int)(intptr_t)v;
}
static void (*volatile exit_fn)(void*) = pthread_exit;
static void exit_deep(int depth) {
    pthread_cleanup_push(record, (void*)(intptr_t)depth);
    if (depth == 0)
        exit_fn((void*)42);
    else
        exit_deep(depth - 1);
    pthread_cleanup_pop(0);
}
static void* exiter(void* arg) {
    (void)arg;
    exit_deep(3);
    return NULL;
}

int main(void) {
    compat_start("unwinder_loading");
    CHECK(!mapped("libgcc_s"), "libgcc_s is loaded before anything unwinds");

    pthread_t t = compat_spawn(waiter, NULL);
    // Once main holds the mutex after `waiting` was set, the waiter is inside pthread_cond_wait
    // (only the wait releases it).
    for (;;) {
        pthread_mutex_lock(&lock);
        const int in_wait = waiting;
        pthread_mutex_unlock(&lock);
        if (in_wait) break;
        sched_yield();
    }
    CHECK_RC(pthread_cancel(t), 0);
    CHECK(compat_join(t) == PTHREAD_CANCELED, "the waiter was not cancelled");
    CHECK(cleanup_held_lock, "the cleanup handler did not hold the mutex");
    CHECK(mapped("libgcc_s"), "cancellation ran without loading the unwinder");

    t = compat_spawn(exiter, NULL);
    CHECK(compat_join(t) == (void*)42, "pthread_exit's value was lost");
    CHECK_EQ(norder, 4);
    for (int i = 0; i < 4; ++i) CHECK_EQ(order[i], i);
    return compat_ok();
}
