// eventfd: counters between threads — a blocking read waits until another thread writes and
// returns the accumulated sum; EFD_SEMAPHORE reads decrement by one (4 consumer threads take
// exactly the 2,000 units 2 producers add); EFD_NONBLOCK read on zero is EAGAIN; an eventfd in
// poll wakes a poller (memcached's wake-up pattern).
#include <poll.h>
#include <sys/eventfd.h>

#include "../common/compat.h"

enum { UNITS = 2000 };
static int sem_fd;
static int taken;  // atomically incremented

static void* producer(void* arg) {
    (void)arg;
    for (int i = 0; i < UNITS / 2; i++) {
        uint64_t one = 1;
        CHECK(write(sem_fd, &one, 8) == 8, "write");
    }
    return NULL;
}

static void* consumer(void* arg) {
    (void)arg;
    for (;;) {
        if (__atomic_load_n(&taken, __ATOMIC_SEQ_CST) >= UNITS) break;
        struct pollfd pf = {sem_fd, POLLIN, 0};
        int n = poll(&pf, 1, 20);
        if (n <= 0) continue;
        uint64_t v;
        ssize_t r = read(sem_fd, &v, 8);
        if (r == 8) {
            CHECK_EQ(v, 1);
            __atomic_add_fetch(&taken, 1, __ATOMIC_SEQ_CST);
        } else {
            CHECK(r < 0 && errno == EAGAIN, "read %zd errno %d", r, errno);
        }
    }
    return NULL;
}

static void* delayed_add(void* arg) {
    usleep(20000);
    uint64_t v = 5;
    CHECK(write(*(int*)arg, &v, 8) == 8, "write");
    v = 7;
    CHECK(write(*(int*)arg, &v, 8) == 8, "write");
    return NULL;
}

int main(void) {
    compat_start("eventfd");
    int fd = eventfd(0, 0);
    CHECK_SYS(fd);
    pthread_t t = compat_spawn(delayed_add, &fd);
    uint64_t v = 0;
    CHECK(read(fd, &v, 8) == 8, "blocking read");
    CHECK(v == 5 || v == 12, "read %llu", (unsigned long long)v);
    compat_join(t);
    if (v == 5) {
        CHECK(read(fd, &v, 8) == 8, "second read");
        CHECK_EQ(v, 7);
    }
    close(fd);

    int nb = eventfd(0, EFD_NONBLOCK);
    CHECK_ERRNO(read(nb, &v, 8), EAGAIN);
    close(nb);

    sem_fd = eventfd(0, EFD_SEMAPHORE | EFD_NONBLOCK);
    CHECK_SYS(sem_fd);
    pthread_t c[4], p[2];
    for (int i = 0; i < 4; i++) c[i] = compat_spawn(consumer, NULL);
    for (int i = 0; i < 2; i++) p[i] = compat_spawn(producer, NULL);
    for (int i = 0; i < 2; i++) compat_join(p[i]);
    for (int i = 0; i < 4; i++) compat_join(c[i]);
    CHECK_EQ(taken, UNITS);
    CHECK_ERRNO(read(sem_fd, &v, 8), EAGAIN);
    close(sem_fd);
    return compat_ok();
}
