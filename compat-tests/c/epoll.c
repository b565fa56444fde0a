// epoll: epoll_wait between threads — a thread blocks in epoll_wait until other threads write to
// pipes (events carry the registered data), a timeout returns 0 never early, EPOLLONESHOT reports
// once until re-armed with EPOLL_CTL_MOD, 4 threads share one epoll set of level-triggered
// non-blocking pipes and together consume exactly the 400 tokens written, and epoll_pwait works.
#include <fcntl.h>
#include <sys/epoll.h>

#include "../common/compat.h"

enum { NPIPES = 8, TOKENS = 400, CONSUMERS = 4 };
static int p[NPIPES][2];
static int ep;
static int consumed;  // atomically incremented

static void* writer(void* arg) {
    (void)arg;
    for (int i = 0; i < TOKENS; i++) {
        CHECK(write(p[i % NPIPES][1], "t", 1) == 1, "write");
        if (i % 50 == 0) usleep(1000);
    }
    return NULL;
}

// Consumes tokens from whichever pipe is ready (fds are non-blocking here, so that two consumers
// woken for the same token do not block: the loser gets EAGAIN).
static void* consumer(void* arg) {
    (void)arg;
    while (__atomic_load_n(&consumed, __ATOMIC_SEQ_CST) < TOKENS) {
        struct epoll_event ev[4];
        int n = epoll_wait(ep, ev, 4, 50);
        CHECK(n >= 0, "epoll_wait errno %d", errno);
        for (int k = 0; k < n; k++) {
            char buf[64];
            ssize_t r = read(p[ev[k].data.u32][0], buf, sizeof buf);
            if (r > 0)
                __atomic_add_fetch(&consumed, (int)r, __ATOMIC_SEQ_CST);
            else
                CHECK(r < 0 && errno == EAGAIN, "read %zd errno %d", r, errno);
        }
    }
    return NULL;
}

static void* one_write(void* arg) {
    usleep(10000);
    CHECK(write(*(int*)arg, "x", 1) == 1, "write");
    return NULL;
}

int main(void) {
    compat_start("epoll");
    for (int i = 0; i < NPIPES; i++) {
        CHECK_SYS(pipe2(p[i], O_NONBLOCK));
    }
    ep = epoll_create1(EPOLL_CLOEXEC);
    CHECK_SYS(ep);
    for (uint32_t i = 0; i < NPIPES; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data = {.u32 = i}};
        CHECK_SYS(epoll_ctl(ep, EPOLL_CTL_ADD, p[i][0], &ev));
    }
    // Timeout.
    struct epoll_event evs[8];
    int64_t t0 = compat_now_ns(CLOCK_MONOTONIC);
    CHECK_EQ(epoll_wait(ep, evs, 8, 30), 0);
    CHECK(compat_now_ns(CLOCK_MONOTONIC) - t0 >= 30000000LL, "epoll_wait timeout early");
    sigset_t none;
    sigemptyset(&none);
    CHECK_EQ(epoll_pwait(ep, evs, 8, 10, &none), 0);

    // Blocking wait woken by another thread; data identifies the pipe.
    pthread_t w = compat_spawn(one_write, &p[5][1]);
    int n = epoll_wait(ep, evs, 8, COMPAT_LONG_MS);
    CHECK(n == 1 && evs[0].data.u32 == 5 && (evs[0].events & EPOLLIN), "n %d data %u", n,
          evs[0].data.u32);
    compat_join(w);
    char ch;
    CHECK(read(p[5][0], &ch, 1) == 1, "read");

    // Oneshot.
    int q[2];
    CHECK_SYS(pipe2(q, O_NONBLOCK));
    int ep2 = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT, .data = {.u32 = 99}};
    CHECK_SYS(epoll_ctl(ep2, EPOLL_CTL_ADD, q[0], &ev));
    w = compat_spawn(one_write, &q[1]);
    CHECK_EQ(epoll_wait(ep2, evs, 8, COMPAT_LONG_MS), 1);
    compat_join(w);
    CHECK_EQ(epoll_wait(ep2, evs, 8, 20), 0);  // data still there, but disarmed
    CHECK_SYS(epoll_ctl(ep2, EPOLL_CTL_MOD, q[0], &ev));
    CHECK_EQ(epoll_pwait(ep2, evs, 8, COMPAT_LONG_MS, NULL), 1);
    CHECK_EQ(evs[0].data.u32, 99);
    close(ep2);
    close(q[0]);
    close(q[1]);

    // Shared epoll set with 4 consumers.
    pthread_t c[CONSUMERS];
    for (int i = 0; i < CONSUMERS; i++) c[i] = compat_spawn(consumer, NULL);
    w = compat_spawn(writer, NULL);
    compat_join(w);
    for (int i = 0; i < CONSUMERS; i++) compat_join(c[i]);
    CHECK_EQ(consumed, TOKENS);
    return compat_ok();
}
