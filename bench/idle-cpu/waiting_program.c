/* What an idle process costs: two threads block reading a pipe while main sleeps SECONDS; then
 * main wakes them, joins them and prints its own resource use (every thread of the process, the
 * runtime's included under arbrun):
 *   voluntary V involuntary I cpu_us C
 * Usage: waiting_program SECONDS */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static int fds[2];

static void* waiter(void* arg) {
    char c;
    if (read(fds[0], &c, 1) != 1) perror("read");
    return arg;
}

int main(int argc, char** argv) {
    const double seconds = argc > 1 ? atof(argv[1]) : 0.0;
    if (seconds <= 0 || pipe(fds) != 0) {
        fprintf(stderr, "usage: waiting_program SECONDS (> 0)\n");
        return 2;
    }
    pthread_t threads[2];
    for (int i = 0; i < 2; ++i) pthread_create(&threads[i], NULL, waiter, NULL);
    struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {
    }
    if (write(fds[1], "xx", 2) != 2) perror("write");
    for (int i = 0; i < 2; ++i) pthread_join(threads[i], NULL);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    const long cpuUs = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000L + ru.ru_utime.tv_usec +
                       ru.ru_stime.tv_usec;
    printf("voluntary %ld involuntary %ld cpu_us %ld\n", ru.ru_nvcsw, ru.ru_nivcsw, cpuUs);
    return 0;
}
