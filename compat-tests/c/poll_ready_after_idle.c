// poll_ready_after_idle: a thread that has waited in a loop, its calls timing out with nothing
// ready, then calls with a descriptor already ready must get it at once, through every
// multiplexing call (poll, ppoll, select, pselect, epoll_wait, epoll_pwait, epoll_pwait2), with
// the right events and the other descriptors reported not ready. Then a writer races the waiter's
// entry into poll and epoll_wait 3,000 times each (a hand-off through two pipes, the write landing
// before, during or after the waiter's call starts): every token must be seen, none lost.
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>

#include "../common/compat.h"

enum { IDLE_CALLS = 8, IDLE_MS = 2, RACE_ROUNDS = 3000 };

static int idle[2];   // never written: the descriptor that stays not ready
static int ready[2];  // written before the call under test

typedef int (*WaitCall)(int timeoutMs);

static int call_poll(int timeoutMs) {
    struct pollfd fds[2] = {{.fd = idle[0], .events = POLLIN}, {.fd = ready[0], .events = POLLIN}};
    const int n = poll(fds, 2, timeoutMs);
    if (n == 1)
        CHECK(fds[0].revents == 0 && fds[1].revents == POLLIN, "poll revents %d %d", fds[0].revents,
              fds[1].revents);
    return n;
}

static int call_ppoll(int timeoutMs) {
    struct pollfd fds[2] = {{.fd = idle[0], .events = POLLIN}, {.fd = ready[0], .events = POLLIN}};
    const struct timespec t = {timeoutMs / 1000, (long)(timeoutMs % 1000) * 1000000L};
    sigset_t none;
    sigemptyset(&none);
    const int n = ppoll(fds, 2, &t, &none);
    if (n == 1)
        CHECK(fds[0].revents == 0 && fds[1].revents == POLLIN, "ppoll revents %d %d",
              fds[0].revents, fds[1].revents);
    return n;
}

static int check_sets(int n, fd_set* in, const char* name) {
    if (n == 1) CHECK(!FD_ISSET(idle[0], in) && FD_ISSET(ready[0], in), "%s sets", name);
    return n;
}

static int call_select(int timeoutMs) {
    fd_set in;
    FD_ZERO(&in);
    FD_SET(idle[0], &in);
    FD_SET(ready[0], &in);
    struct timeval t = {timeoutMs / 1000, (long)(timeoutMs % 1000) * 1000L};
    const int nfds = (idle[0] > ready[0] ? idle[0] : ready[0]) + 1;
    return check_sets(select(nfds, &in, NULL, NULL, &t), &in, "select");
}

static int call_pselect(int timeoutMs) {
    fd_set in;
    FD_ZERO(&in);
    FD_SET(idle[0], &in);
    FD_SET(ready[0], &in);
    const struct timespec t = {timeoutMs / 1000, (long)(timeoutMs % 1000) * 1000000L};
    const int nfds = (idle[0] > ready[0] ? idle[0] : ready[0]) + 1;
    return check_sets(pselect(nfds, &in, NULL, NULL, &t, NULL), &in, "pselect");
}

static int ep;  // holds idle[0] (data 1) and ready[0] (data 2)

static int check_event(int n, const struct epoll_event* ev, const char* name) {
    if (n == 1)
        CHECK(ev->data.u32 == 2 && ev->events == EPOLLIN, "%s event %u %x", name, ev->data.u32,
              ev->events);
    return n;
}

static int call_epoll_wait(int timeoutMs) {
    struct epoll_event ev[2];
    return check_event(epoll_wait(ep, ev, 2, timeoutMs), ev, "epoll_wait");
}

static int call_epoll_pwait(int timeoutMs) {
    struct epoll_event ev[2];
    sigset_t none;
    sigemptyset(&none);
    return check_event(epoll_pwait(ep, ev, 2, timeoutMs, &none), ev, "epoll_pwait");
}

static int call_epoll_pwait2(int timeoutMs) {
    struct epoll_event ev[2];
    const struct timespec t = {timeoutMs / 1000, (long)(timeoutMs % 1000) * 1000000L};
    return check_event(epoll_pwait2(ep, ev, 2, &t, NULL), ev, "epoll_pwait2");
}

// IDLE_CALLS calls that time out with nothing ready, then one with `ready` already readable.
static void ready_after_idle(WaitCall call, const char* name) {
    for (int i = 0; i < IDLE_CALLS; i++) {
        const int64_t t0 = compat_now_ns(CLOCK_MONOTONIC);
        CHECK(call(IDLE_MS) == 0, "%s: idle call %d found something", name, i);
        CHECK(compat_now_ns(CLOCK_MONOTONIC) - t0 >= IDLE_MS * 1000000LL, "%s: early timeout",
              name);
    }
    CHECK(write(ready[1], "r", 1) == 1, "write");
    CHECK(call(COMPAT_LONG_MS) == 1, "%s: the ready descriptor was not reported", name);
    char c;
    CHECK(read(ready[0], &c, 1) == 1, "read");
    CHECK(call(0) == 0, "%s: still ready after the read", name);
}

static int token[2], ack[2];

static void* race_writer(void* arg) {
    (void)arg;
    for (int i = 0; i < RACE_ROUNDS; i++) {
        for (volatile int spin = i % 97 * 13; spin > 0; spin--) {
        }
        const char t = (char)i;
        CHECK(write(token[1], &t, 1) == 1, "token write");
        char a;
        CHECK(read(ack[0], &a, 1) == 1 && a == t, "ack");
    }
    return NULL;
}

// The waiter: waits for each token with `useEpoll` epoll_wait or poll, no time-out, then acks it.
static void race(int useEpoll) {
    CHECK_SYS(pipe(token));
    CHECK_SYS(pipe(ack));
    int tep = -1;
    if (useEpoll) {
        tep = epoll_create1(EPOLL_CLOEXEC);
        CHECK_SYS(tep);
        struct epoll_event ev = {.events = EPOLLIN, .data = {.u32 = 7}};
        CHECK_SYS(epoll_ctl(tep, EPOLL_CTL_ADD, token[0], &ev));
    }
    pthread_t w = compat_spawn(race_writer, NULL);
    for (int i = 0; i < RACE_ROUNDS; i++) {
        if (useEpoll) {
            struct epoll_event ev;
            CHECK(epoll_wait(tep, &ev, 1, COMPAT_LONG_MS) == 1 && ev.data.u32 == 7,
                  "round %d: epoll_wait", i);
        } else {
            struct pollfd p = {.fd = token[0], .events = POLLIN};
            CHECK(poll(&p, 1, COMPAT_LONG_MS) == 1 && p.revents == POLLIN, "round %d: poll", i);
        }
        char t;
        CHECK(read(token[0], &t, 1) == 1 && t == (char)i, "round %d: token", i);
        CHECK(write(ack[1], &t, 1) == 1, "ack write");
    }
    compat_join(w);
    if (tep >= 0) close(tep);
    close(token[0]);
    close(token[1]);
    close(ack[0]);
    close(ack[1]);
}

int main(void) {
    compat_start("poll_ready_after_idle");
    CHECK_SYS(pipe(idle));
    CHECK_SYS(pipe(ready));
    ep = epoll_create1(EPOLL_CLOEXEC);
    CHECK_SYS(ep);
    struct epoll_event ev = {.events = EPOLLIN, .data = {.u32 = 1}};
    CHECK_SYS(epoll_ctl(ep, EPOLL_CTL_ADD, idle[0], &ev));
    ev.data.u32 = 2;
    CHECK_SYS(epoll_ctl(ep, EPOLL_CTL_ADD, ready[0], &ev));
    ready_after_idle(call_poll, "poll");
    ready_after_idle(call_ppoll, "ppoll");
    ready_after_idle(call_select, "select");
    ready_after_idle(call_pselect, "pselect");
    ready_after_idle(call_epoll_wait, "epoll_wait");
    ready_after_idle(call_epoll_pwait, "epoll_pwait");
    ready_after_idle(call_epoll_pwait2, "epoll_pwait2");
    race(0);
    race(1);
    return compat_ok();
}
