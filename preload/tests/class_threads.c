/* class_threads: a plain pthread program for the --class and --stats end-to-end tests
 * (class_rules_e2e.sh). Its start routines are mostly static (not exported: only .symtab names
 * them) and one thread is created through a helper, for caller: rules. It creates, in order:
 *   0 encoder_worker (static)      1 io_loop (static)
 *   2 pooled_task via spawn_from_pool (static helper)      3 plain_worker (exported)
 * then 3 threads alive at once (creation indexes 4..6, plain_worker), and prints "ok
 * class_threads". */
#include <pthread.h>
#include <stdio.h>

static void* encoder_worker(void* arg) {
    return arg;
}

static void* io_loop(void* arg) {
    return arg;
}

static void* pooled_task(void* arg) {
    return arg;
}

void* plain_worker(void* arg);
void* plain_worker(void* arg) {
    return arg;
}

static int create_or_die(pthread_t* thread, void* (*start)(void*)) {
    int err = pthread_create(thread, NULL, start, NULL);
    if (err != 0) fprintf(stderr, "class_threads: pthread_create failed (%d)\n", err);
    return err;
}

/* Not inlined and not cloned, so that it appears on the creating stack under its own name. */
static __attribute__((noinline, noclone)) int spawn_from_pool(pthread_t* thread) {
    int err = create_or_die(thread, pooled_task);
    __asm__ volatile("" ::: "memory"); /* keeps the call above from being a tail call */
    return err;
}

int main(void) {
    void* (*starts[])(void*) = {encoder_worker, io_loop, NULL, plain_worker};
    for (int i = 0; i < 4; ++i) {
        pthread_t thread;
        int err = starts[i] ? create_or_die(&thread, starts[i]) : spawn_from_pool(&thread);
        if (err != 0 || pthread_join(thread, NULL) != 0) return 1;
    }
    pthread_t together[3];
    for (int i = 0; i < 3; ++i) {
        if (create_or_die(&together[i], plain_worker) != 0) return 1;
    }
    for (int i = 0; i < 3; ++i) {
        if (pthread_join(together[i], NULL) != 0) return 1;
    }
    printf("ok class_threads\n");
    return 0;
}
