// socket_write: write() and writev() on sockets, before and after the socket is known as one
// (arbrun makes them as a non-blocking try once a recv on the number succeeded or accept returned
// it) — a blocking stream socket takes a 4 MiB write (and a 3 MiB writev of three buffers) whole
// while its reader drains it in small pieces; an O_NONBLOCK socket gets a short count, then
// EAGAIN; SO_SNDTIMEO on a full blocking socket gives what fitted, then EAGAIN after the timeout;
// SOCK_SEQPACKET keeps each write as one record; a write to a socket whose peer closed fails with
// EPIPE and raises SIGPIPE; a number first used by a socket, closed (by the program, or inside libc
// by fclose) and reused by a pipe or a regular file, writes as those.
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "../common/compat.h"

enum { BIG = 4 << 20, PIECE = 4096 };

static unsigned char pattern(size_t i) {
    return (unsigned char)(i * 131 + i / 4093);
}

struct drain {
    int fd;
    size_t expect;
    size_t got;
    int ok;
};

// Reads `expect` bytes in small pieces, checking the pattern.
static void* drainer(void* arg) {
    struct drain* d = arg;
    unsigned char buf[PIECE / 2];
    d->ok = 1;
    while (d->got < d->expect) {
        const ssize_t r = read(d->fd, buf, sizeof buf);
        CHECK(r > 0, "drain read %zd errno %d", r, errno);
        for (ssize_t i = 0; i < r; i++) {
            if (buf[i] != pattern(d->got + (size_t)i)) d->ok = 0;
        }
        d->got += (size_t)r;
    }
    return NULL;
}

static unsigned char* big;

// A socketpair of `type` in sv; sv[0] made known as a socket to arbrun (a recv on it succeeds)
// when `known`.
static void socket_pair(int type, int known, int sv[2]) {
    CHECK_SYS(socketpair(AF_UNIX, type, 0, sv));
    if (!known) return;
    char c = 'k';
    CHECK(write(sv[1], &c, 1) == 1, "hint write");
    CHECK(read(sv[0], &c, 1) == 1 && c == 'k', "hint read");
}

static void blocking_whole(int known) {
    int sv[2];
    socket_pair(SOCK_STREAM, known, sv);
    struct drain d = {sv[1], BIG, 0, 0};
    pthread_t t = compat_spawn(drainer, &d);
    CHECK(write(sv[0], big, BIG) == BIG, "blocking write not whole (known %d)", known);
    compat_join(t);
    CHECK(d.ok, "write: data differs");

    // writev: three buffers, 3 MiB in all.
    struct iovec iov[3] = {{big, 1 << 20}, {big + (1 << 20), 1 << 20}, {big + (2 << 20), 1 << 20}};
    d = (struct drain){sv[1], 3 << 20, 0, 0};
    t = compat_spawn(drainer, &d);
    CHECK(writev(sv[0], iov, 3) == 3 << 20, "blocking writev not whole (known %d)", known);
    compat_join(t);
    CHECK(d.ok, "writev: data differs");
    close(sv[0]);
    close(sv[1]);
}

static void nonblocking_short(int known) {
    int sv[2];
    socket_pair(SOCK_STREAM, known, sv);
    CHECK_SYS(fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK));
    const ssize_t r = write(sv[0], big, BIG);
    CHECK(r > 0 && r < BIG, "non-blocking write returned %zd (known %d)", r, known);
    CHECK_ERRNO(write(sv[0], big, 16), EAGAIN);
    struct iovec iov[2] = {{big, 8}, {big + 8, 8}};
    CHECK_ERRNO(writev(sv[0], iov, 2), EAGAIN);
    close(sv[0]);
    close(sv[1]);
}

static void send_timeout(int known) {
    int sv[2];
    socket_pair(SOCK_STREAM, known, sv);
    struct timeval tv = {0, 50 * 1000};
    CHECK_SYS(setsockopt(sv[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv));
    const ssize_t r = write(sv[0], big, BIG);
    CHECK(r > 0 && r < BIG, "SO_SNDTIMEO write returned %zd (known %d)", r, known);
    const int64_t t0 = compat_now_ns(CLOCK_MONOTONIC);
    CHECK_ERRNO(write(sv[0], big, 16), EAGAIN);
    CHECK(compat_now_ns(CLOCK_MONOTONIC) - t0 >= 40 * 1000000LL, "SO_SNDTIMEO: EAGAIN early");
    close(sv[0]);
    close(sv[1]);
}

static void seqpacket_records(int known) {
    int sv[2];
    socket_pair(SOCK_SEQPACKET, known, sv);
    const size_t sizes[] = {1, 100, 1000, 3};
    for (size_t i = 0; i < 4; i++) CHECK(write(sv[0], big, sizes[i]) == (ssize_t)sizes[i], "seq");
    struct iovec iov[2] = {{big, 5}, {big + 5, 7}};
    CHECK_EQ(writev(sv[0], iov, 2), 12);
    char buf[2048];
    for (size_t i = 0; i < 4; i++) {
        CHECK(recv(sv[1], buf, sizeof buf, 0) == (ssize_t)sizes[i], "record %zu (known %d)", i,
              known);
    }
    CHECK_EQ(recv(sv[1], buf, sizeof buf, 0), 12);
    close(sv[0]);
    close(sv[1]);
}

static volatile sig_atomic_t sigpipes;
static void on_sigpipe(int sig) {
    (void)sig;
    sigpipes++;
}

static void broken_pipe(int known) {
    int sv[2];
    socket_pair(SOCK_STREAM, known, sv);
    close(sv[1]);
    const int before = sigpipes;
    CHECK_ERRNO(write(sv[0], big, 10), EPIPE);
    CHECK(sigpipes == before + 1, "write: SIGPIPE count %d -> %d", before, (int)sigpipes);
    struct iovec iov = {big, 10};
    CHECK_ERRNO(writev(sv[0], &iov, 1), EPIPE);
    CHECK(sigpipes == before + 2, "writev: SIGPIPE count %d -> %d", before, (int)sigpipes);
    close(sv[0]);
}

// A number known as a socket, closed and reused by a pipe's write end, then by a regular file.
static void reused_number(void) {
    int sv[2];
    socket_pair(SOCK_STREAM, 1, sv);
    const int num = sv[0];
    close(sv[1]);
    int p[2];
    CHECK_SYS(pipe(p));
    CHECK_SYS(dup2(p[1], num));  // the old socket closed by dup2
    close(p[1]);
    CHECK_EQ(write(num, "pipe", 4), 4);
    char buf[8];
    CHECK_EQ(read(p[0], buf, sizeof buf), 4);
    close(p[0]);
    close(num);
    const int f = compat_temp_file("socket_write");
    if (f != num) {
        CHECK_SYS(dup2(f, num));
        close(f);
    }
    CHECK_EQ(write(num, big, 100000), 100000);
    struct iovec iov[2] = {{big, 10}, {big, 20}};
    CHECK_EQ(writev(num, iov, 2), 30);
    CHECK_EQ(lseek(num, 0, SEEK_CUR), 100030);
    close(num);
}

// A number known as a socket and closed inside libc (fclose of an fdopen'ed stream: no close()
// call of the program's), so that arbrun may still take it for a socket. Returns the number;
// `*below`, when not null, gets a descriptor opened before the socket (so a lower number) that
// the caller closes to free it.
static int socket_closed_inside_libc(int* below) {
    if (below) CHECK_SYS(*below = open("/dev/null", O_RDONLY));
    int sv[2];
    socket_pair(SOCK_STREAM, 1, sv);
    close(sv[1]);
    FILE* stream = fdopen(sv[0], "w");
    CHECK(stream != NULL, "fdopen");
    CHECK_EQ(fclose(stream), 0);
    return sv[0];
}

// Such a number reused by a regular file, then by a pipe's write end.
static void closed_inside_libc(void) {
    int num = socket_closed_inside_libc(NULL);
    const int f = compat_temp_file("socket_write");
    CHECK(f == num, "the file got %d, not the freed %d", f, num);
    CHECK_EQ(write(f, big, 200000), 200000);
    struct iovec iov[2] = {{big, 10}, {big, 20}};
    CHECK_EQ(writev(f, iov, 2), 30);
    CHECK_EQ(lseek(f, 0, SEEK_CUR), 200030);
    close(f);

    int below;
    num = socket_closed_inside_libc(&below);
    close(below);
    int p[2];
    CHECK_SYS(pipe(p));  // the two lowest free numbers: the read end gets `below`
    CHECK(p[1] == num, "the pipe's write end got %d, not the freed %d", p[1], num);
    struct drain d = {p[0], BIG, 0, 0};
    pthread_t t = compat_spawn(drainer, &d);
    CHECK(write(p[1], big, BIG) == BIG, "pipe write not whole");
    compat_join(t);
    CHECK(d.ok, "pipe: data differs");
    close(p[0]);
    close(p[1]);
}

int main(void) {
    compat_start("socket_write");
    big = malloc(BIG);
    CHECK(big != NULL, "malloc");
    for (size_t i = 0; i < BIG; i++) big[i] = pattern(i);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigpipe;
    CHECK_SYS(sigaction(SIGPIPE, &sa, NULL));
    for (int known = 0; known <= 1; known++) {
        blocking_whole(known);
        nonblocking_short(known);
        send_timeout(known);
        seqpacket_records(known);
        broken_pipe(known);
    }
    reused_number();
    closed_inside_libc();
    free(big);
    return compat_ok();
}
