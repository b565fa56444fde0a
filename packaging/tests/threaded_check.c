/* A small threaded program standing in for a user's: 8 threads add to a counter under a mutex and
 * meet at a condition variable; main checks the sum and prints the preload library it runs with
 * (from /proc/self/maps), so the install tests can see which libarbrun.so the installed arbrun
 * chose. Prints "ok threaded_check" on success. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

enum { kThreads = 8, kAdds = 20000 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t all_here = PTHREAD_COND_INITIALIZER;
static long counter;
static int arrived;

/* Each thread adds under the lock, then waits until every thread has arrived (a condvar wait
 * that only works if the threads really run concurrently or are scheduled in turn). */
static void* work(void* arg) {
    (void)arg;
    for (int i = 0; i < kAdds; ++i) {
        pthread_mutex_lock(&lock);
        ++counter;
        pthread_mutex_unlock(&lock);
    }
    pthread_mutex_lock(&lock);
    if (++arrived == kThreads) pthread_cond_broadcast(&all_here);
    while (arrived < kThreads) pthread_cond_wait(&all_here, &lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

/* The path of the mapped libarbrun.so, or "none". */
static void print_preload(void) {
    FILE* maps = fopen("/proc/self/maps", "r");
    char line[4096];
    const char* found = "none";
    static char path[4096];
    while (maps && fgets(line, sizeof line, maps)) {
        const char* p = strchr(line, '/');
        if (p && strstr(p, "/libarbrun.so")) {
            snprintf(path, sizeof path, "%s", p);
            path[strcspn(path, "\n")] = '\0';
            found = path;
            break;
        }
    }
    if (maps) fclose(maps);
    printf("preload: %s\n", found);
}

int main(void) {
    pthread_t threads[kThreads];
    for (int i = 0; i < kThreads; ++i) {
        if (pthread_create(&threads[i], NULL, work, NULL) != 0) {
            fprintf(stderr, "threaded_check: pthread_create failed\n");
            return 1;
        }
    }
    for (int i = 0; i < kThreads; ++i) pthread_join(threads[i], NULL);
    print_preload();
    if (counter != (long)kThreads * kAdds) {
        fprintf(stderr, "threaded_check: counter %ld, expected %ld\n", counter,
                (long)kThreads * kAdds);
        return 1;
    }
    printf("ok threaded_check\n");
    return 0;
}
