// semaphore: unnamed POSIX semaphores — sem_init value/EINVAL above SEM_VALUE_MAX, sem_getvalue,
// sem_trywait EAGAIN at zero, sem_timedwait (CLOCK_REALTIME) and sem_clockwait (both clocks)
// ETIMEDOUT never early and EINVAL for a bad timespec when it would block, sem_post EOVERFLOW at
// SEM_VALUE_MAX, producer/consumer with 4+4 threads over a bounded buffer (exact sums), and a
// waiter released by a post from another thread.
#include <limits.h>
#include <semaphore.h>

#include "../common/compat.h"

enum { CAP = 8, ITEMS = 20000, NP = 4, NC = 4 };
static sem_t empty_slots, full_slots, lock;
static long buf[CAP];
static int head, tail;
static long produced_sum, consumed_sum;  // guarded by `lock`

static void* producer(void* arg) {
    long base = (long)(intptr_t)arg * ITEMS;
    for (long i = 0; i < ITEMS; i++) {
        CHECK_SYS(sem_wait(&empty_slots));
        CHECK_SYS(sem_wait(&lock));
        buf[head] = base + i;
        head = (head + 1) % CAP;
        produced_sum += base + i;
        CHECK_SYS(sem_post(&lock));
        CHECK_SYS(sem_post(&full_slots));
    }
    return NULL;
}

static void* consumer(void* arg) {
    (void)arg;
    for (long i = 0; i < ITEMS; i++) {
        struct timespec dl = compat_deadline_ms(CLOCK_MONOTONIC, COMPAT_LONG_MS);
        CHECK_SYS(sem_clockwait(&full_slots, CLOCK_MONOTONIC, &dl));
        CHECK_SYS(sem_wait(&lock));
        consumed_sum += buf[tail];
        tail = (tail + 1) % CAP;
        CHECK_SYS(sem_post(&lock));
        CHECK_SYS(sem_post(&empty_slots));
    }
    return NULL;
}

static sem_t wake;
static void* poster(void* arg) {
    (void)arg;
    usleep(20000);
    CHECK_SYS(sem_post(&wake));
    return NULL;
}

int main(void) {
    compat_start("semaphore");
    sem_t s;
    CHECK_ERRNO(sem_init(&s, 0, (unsigned)SEM_VALUE_MAX + 1u), EINVAL);
    CHECK_SYS(sem_init(&s, 0, 2));
    int v = -1;
    CHECK_SYS(sem_getvalue(&s, &v));
    CHECK_EQ(v, 2);
    CHECK_SYS(sem_trywait(&s));
    CHECK_SYS(sem_trywait(&s));
    CHECK_ERRNO(sem_trywait(&s), EAGAIN);
    CHECK_SYS(sem_getvalue(&s, &v));
    CHECK_EQ(v, 0);

    struct timespec dl = compat_deadline_ms(CLOCK_REALTIME, 25);
    CHECK_ERRNO(sem_timedwait(&s, &dl), ETIMEDOUT);
    CHECK(compat_reached(CLOCK_REALTIME, &dl), "sem_timedwait returned early");
    dl = compat_deadline_ms(CLOCK_MONOTONIC, 25);
    CHECK_ERRNO(sem_clockwait(&s, CLOCK_MONOTONIC, &dl), ETIMEDOUT);
    CHECK(compat_reached(CLOCK_MONOTONIC, &dl), "sem_clockwait(MONOTONIC) returned early");
    dl = compat_deadline_ms(CLOCK_REALTIME, 25);
    CHECK_ERRNO(sem_clockwait(&s, CLOCK_REALTIME, &dl), ETIMEDOUT);
    CHECK(compat_reached(CLOCK_REALTIME, &dl), "sem_clockwait(REALTIME) returned early");
    struct timespec past = {0, 0};
    CHECK_ERRNO(sem_timedwait(&s, &past), ETIMEDOUT);

    struct timespec bad = compat_deadline_ms(CLOCK_REALTIME, 1000);
    bad.tv_nsec = 1000000000L;
    CHECK_ERRNO(sem_timedwait(&s, &bad), EINVAL);
    bad.tv_nsec = -1;
    CHECK_ERRNO(sem_clockwait(&s, CLOCK_MONOTONIC, &bad), EINVAL);
    dl = compat_deadline_ms(CLOCK_MONOTONIC, 1000);
    CHECK_ERRNO(sem_clockwait(&s, CLOCK_PROCESS_CPUTIME_ID, &dl), EINVAL);

    // Overflow.
    sem_t big;
    CHECK_SYS(sem_init(&big, 0, SEM_VALUE_MAX));
    CHECK_ERRNO(sem_post(&big), EOVERFLOW);
    CHECK_SYS(sem_getvalue(&big, &v));
    CHECK_EQ(v, SEM_VALUE_MAX);
    CHECK_SYS(sem_destroy(&big));

    // A post from another thread releases a timed waiter.
    CHECK_SYS(sem_init(&wake, 0, 0));
    pthread_t t = compat_spawn(poster, NULL);
    dl = compat_deadline_ms(CLOCK_REALTIME, COMPAT_LONG_MS);
    CHECK_SYS(sem_timedwait(&wake, &dl));
    compat_join(t);
    t = compat_spawn(poster, NULL);
    CHECK_SYS(sem_wait(&wake));
    compat_join(t);

    // Bounded buffer.
    CHECK_SYS(sem_init(&empty_slots, 0, CAP));
    CHECK_SYS(sem_init(&full_slots, 0, 0));
    CHECK_SYS(sem_init(&lock, 0, 1));
    pthread_t p[NP], c[NC];
    for (intptr_t i = 0; i < NP; i++) p[i] = compat_spawn(producer, (void*)i);
    for (int i = 0; i < NC; i++) c[i] = compat_spawn(consumer, NULL);
    for (int i = 0; i < NP; i++) compat_join(p[i]);
    for (int i = 0; i < NC; i++) compat_join(c[i]);
    CHECK_EQ(produced_sum, consumed_sum);
    long n = (long)NP * ITEMS;
    CHECK_EQ(consumed_sum, n * (n - 1) / 2);
    CHECK_SYS(sem_getvalue(&empty_slots, &v));
    CHECK_EQ(v, CAP);
    CHECK_SYS(sem_getvalue(&full_slots, &v));
    CHECK_EQ(v, 0);
    CHECK_SYS(sem_destroy(&s));
    return compat_ok();
}
