// poll_select: poll, ppoll, select and pselect between threads — a thread blocks in each until
// another thread writes to a pipe (readiness reported for exactly that fd, data readable);
// timeouts return 0 never early; POLLHUP after the writer closes; poll with no fds works as a
// sleep; 4 threads poll 4 different pipes at once and each is woken by its own writer.
#include <poll.h>
#include <sys/select.h>

#include "../common/compat.h"

static int p[4][2];

static void* delayed_writer(void* arg) {
    int i = (int)(intptr_t)arg;
    usleep(10000 + 5000 * i);
    CHECK(write(p[i][1], "w", 1) == 1, "write");
    return NULL;
}

static void* poller(void* arg) {
    int i = (int)(intptr_t)arg;
    struct pollfd pf = {p[i][0], POLLIN, 0};
    int n = poll(&pf, 1, COMPAT_LONG_MS);
    CHECK(n == 1 && (pf.revents & POLLIN), "poller %d: n %d revents 0x%x", i, n, pf.revents);
    char ch;
    CHECK(read(p[i][0], &ch, 1) == 1 && ch == 'w', "poller %d read", i);
    return NULL;
}

int main(void) {
    compat_start("poll_select");
    for (int i = 0; i < 4; i++) CHECK_SYS(pipe(p[i]));

    // Timeouts: poll (ms), ppoll (timespec), select and pselect, with nothing readable.
    struct pollfd pf = {p[0][0], POLLIN, 0};
    int64_t t0 = compat_now_ns(CLOCK_MONOTONIC);
    CHECK_EQ(poll(&pf, 1, 30), 0);
    CHECK(compat_now_ns(CLOCK_MONOTONIC) - t0 >= 30000000LL, "poll timeout early");
    struct timespec ts = {0, 30000000};
    t0 = compat_now_ns(CLOCK_MONOTONIC);
    CHECK_EQ(ppoll(&pf, 1, &ts, NULL), 0);
    CHECK(compat_now_ns(CLOCK_MONOTONIC) - t0 >= 30000000LL, "ppoll timeout early");
    fd_set rs;
    FD_ZERO(&rs);
    FD_SET(p[0][0], &rs);
    struct timeval tv = {0, 30000};
    t0 = compat_now_ns(CLOCK_MONOTONIC);
    CHECK_EQ(select(p[0][0] + 1, &rs, NULL, NULL, &tv), 0);
    CHECK(compat_now_ns(CLOCK_MONOTONIC) - t0 >= 30000000LL, "select timeout early");
    FD_ZERO(&rs);
    FD_SET(p[0][0], &rs);
    t0 = compat_now_ns(CLOCK_MONOTONIC);
    CHECK_EQ(pselect(p[0][0] + 1, &rs, NULL, NULL, &ts, NULL), 0);
    CHECK(compat_now_ns(CLOCK_MONOTONIC) - t0 >= 30000000LL, "pselect timeout early");
    t0 = compat_now_ns(CLOCK_MONOTONIC);
    CHECK_EQ(poll(NULL, 0, 20), 0);
    CHECK(compat_now_ns(CLOCK_MONOTONIC) - t0 >= 20000000LL, "poll(NULL, 0) early");
    CHECK_EQ(poll(&pf, 1, 0), 0);

    // Blocking until another thread writes: poll, select, pselect, ppoll.
    for (int api = 0; api < 4; api++) {
        pthread_t w = compat_spawn(delayed_writer, (void*)0);
        int n;
        if (api == 0) {
            pf.revents = 0;
            n = poll(&pf, 1, COMPAT_LONG_MS);
            CHECK(n == 1 && (pf.revents & POLLIN), "poll: n %d revents 0x%x", n, pf.revents);
        } else if (api == 1) {
            struct timespec big = {COMPAT_LONG_MS / 1000, 0};
            pf.revents = 0;
            n = ppoll(&pf, 1, &big, NULL);
            CHECK(n == 1 && (pf.revents & POLLIN), "ppoll: n %d revents 0x%x", n, pf.revents);
        } else {
            // Also watch another, silent pipe: only p[0] may be reported.
            FD_ZERO(&rs);
            FD_SET(p[0][0], &rs);
            FD_SET(p[3][0], &rs);
            int maxfd = (p[0][0] > p[3][0] ? p[0][0] : p[3][0]) + 1;
            if (api == 2) {
                struct timeval big = {COMPAT_LONG_MS / 1000, 0};
                n = select(maxfd, &rs, NULL, NULL, &big);
            } else {
                struct timespec big = {COMPAT_LONG_MS / 1000, 0};
                n = pselect(maxfd, &rs, NULL, NULL, &big, NULL);
            }
            CHECK(n == 1 && FD_ISSET(p[0][0], &rs) && !FD_ISSET(p[3][0], &rs),
                  "select api %d: n %d", api, n);
        }
        char ch;
        CHECK(read(p[0][0], &ch, 1) == 1, "read after readiness");
        compat_join(w);
    }

    // Four pollers at once.
    pthread_t pl[4], wr[4];
    for (intptr_t i = 0; i < 4; i++) pl[i] = compat_spawn(poller, (void*)i);
    for (intptr_t i = 0; i < 4; i++) wr[i] = compat_spawn(delayed_writer, (void*)i);
    for (int i = 0; i < 4; i++) {
        compat_join(pl[i]);
        compat_join(wr[i]);
    }

    // POLLHUP after the write end closes.
    close(p[1][1]);
    pf.fd = p[1][0];
    pf.revents = 0;
    CHECK_EQ(poll(&pf, 1, COMPAT_LONG_MS), 1);
    CHECK(pf.revents & POLLHUP, "no POLLHUP: revents 0x%x", pf.revents);
    return compat_ok();
}
