// constructor_threads: threads created before main(), in a constructor: one is joined there (the
// process must not hang waiting for it before main runs), one keeps running into main() and hands
// main a value through a semaphore, and one is left blocked and joined by main. Then main creates
// and joins more threads and returns 0.
#include <semaphore.h>

#include "../common/compat.h"

static int early_sum;           // written by the first constructor thread, read after its join
static sem_t to_main;           // posted by the running constructor thread with its value ready
static sem_t from_main;         // posted by main: the blocked constructor thread may go on
static volatile int handed;     // the value handed to main (written before the post)
static pthread_t running, blocked;
static int constructor_failed;  // a constructor cannot CHECK (compat_start has not run): noted

static void* add_up(void* arg) {
    int n = *(int*)arg, sum = 0;
    for (int i = 1; i <= n; i++) sum += i;
    early_sum = sum;
    return NULL;
}

static void* hand_to_main(void* arg) {
    (void)arg;
    handed = 4242;
    sem_post(&to_main);
    return (void*)17;
}

static void* wait_for_main(void* arg) {
    (void)arg;
    while (sem_wait(&from_main) != 0) {
    }
    return (void*)23;
}

__attribute__((constructor)) static void start_threads_early(void) {
    int n = 100;
    pthread_t t;
    if (sem_init(&to_main, 0, 0) != 0 || sem_init(&from_main, 0, 0) != 0) constructor_failed = 1;
    if (pthread_create(&t, NULL, add_up, &n) != 0 || pthread_join(t, NULL) != 0) {
        constructor_failed = 2;
        return;
    }
    if (pthread_create(&running, NULL, hand_to_main, NULL) != 0) constructor_failed = 3;
    if (pthread_create(&blocked, NULL, wait_for_main, NULL) != 0) constructor_failed = 4;
}

static void* square(void* arg) {
    long v = (long)arg;
    return (void*)(v * v);
}

int main(void) {
    compat_start("constructor_threads");
    CHECK(constructor_failed == 0, "a constructor's thread call failed");
    CHECK(early_sum == 5050, "the thread joined in the constructor did not run");
    CHECK_RC(sem_wait(&to_main), 0);
    CHECK(handed == 4242, "the running constructor thread's value");
    void* result;
    CHECK_RC(pthread_join(running, &result), 0);
    CHECK(result == (void*)17, "the running constructor thread's result");
    CHECK_RC(sem_post(&from_main), 0);
    CHECK_RC(pthread_join(blocked, &result), 0);
    CHECK(result == (void*)23, "the blocked constructor thread's result");
    for (long i = 0; i < 50; i++) {
        pthread_t t;
        CHECK_RC(pthread_create(&t, NULL, square, (void*)i), 0);
        CHECK_RC(pthread_join(t, &result), 0);
        CHECK(result == (void*)(i * i), "a thread main created");
    }
    return compat_ok();
}
