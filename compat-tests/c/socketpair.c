// socketpair: AF_UNIX socketpairs between threads — SOCK_STREAM ping-pong of 5,000 messages with
// send/recv (MSG_WAITALL for a 64-byte message), SOCK_SEQPACKET keeps message boundaries,
// SOCK_DGRAM one message per recv; MSG_DONTWAIT gives EAGAIN on an empty socket; shutdown gives
// EOF to the peer. read()/readv() on sockets (arbrun makes them as recv with MSG_DONTWAIT first):
// a program's O_NONBLOCK socket still gets EAGAIN from read; a blocking read whose peer closes
// returns 0; a zero-length read does not consume a datagram; readv scatters; a descriptor number
// first used by a pipe, closed and reused by a socket reads (and waits) as a socket. MSG_WAITALL
// on a stream socket waits for the whole request when it arrives in pieces.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../common/compat.h"

enum { TRIPS = 5000 };
static int sv[2];

static void* stream_peer(void* arg) {
    (void)arg;
    char msg[64];
    for (int i = 0; i < TRIPS; i++) {
        CHECK(recv(sv[1], msg, sizeof msg, MSG_WAITALL) == sizeof msg, "peer recv");
        msg[0]++;
        CHECK(send(sv[1], msg, sizeof msg, 0) == sizeof msg, "peer send");
    }
    char ch;
    CHECK(recv(sv[1], &ch, 1, 0) == 0, "expected EOF after shutdown");
    return NULL;
}

static int pk[2];
static void* packet_peer(void* arg) {
    (void)arg;
    // Sends 100 messages of lengths 1..100.
    char buf[128];
    memset(buf, 'p', sizeof buf);
    for (int i = 1; i <= 100; i++) CHECK(send(pk[1], buf, (size_t)i, 0) == i, "packet send %d", i);
    return NULL;
}

static int ws[2];
static void* halves_peer(void* arg) {
    (void)arg;
    char half[32];
    memset(half, 'h', sizeof half);
    CHECK(send(ws[1], half, sizeof half, 0) == sizeof half, "first half");
    usleep(2000);  // not synchronisation: makes the receiver see the first half alone
    CHECK(send(ws[1], half, sizeof half, 0) == sizeof half, "second half");
    return NULL;
}

// A blocking recv with MSG_WAITALL on a stream socket returns the whole request even when it
// arrives in pieces; on a datagram socket it returns one (shorter) datagram.
static void waitall_in_pieces(void) {
    CHECK_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, ws));
    char buf[64];
    for (int i = 0; i < 20; i++) {
        pthread_t t = compat_spawn(halves_peer, NULL);
        ssize_t n = recv(ws[0], buf, sizeof buf, MSG_WAITALL);
        CHECK(n == sizeof buf, "MSG_WAITALL returned %zd of %zu", n, sizeof buf);
        compat_join(t);
    }
    close(ws[0]);
    close(ws[1]);
    CHECK_SYS(socketpair(AF_UNIX, SOCK_DGRAM, 0, ws));
    CHECK(send(ws[1], "abc", 3, 0) == 3, "dgram send");
    CHECK(recv(ws[0], buf, sizeof buf, MSG_WAITALL) == 3, "dgram MSG_WAITALL");
    close(ws[0]);
    close(ws[1]);
}

static int rs[2];
static void* close_peer(void* arg) {
    (void)arg;
    CHECK(write(rs[1], "ab", 2) == 2, "write");
    close(rs[1]);
    return NULL;
}

// read/readv on sockets through the preload's recv fast path, and descriptor reuse across kinds.
static void read_on_sockets(void) {
    CHECK_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, rs));
    char buf[8];
    int fl = fcntl(rs[0], F_GETFL);
    CHECK_SYS(fcntl(rs[0], F_SETFL, fl | O_NONBLOCK));
    CHECK_ERRNO(read(rs[0], buf, sizeof buf), EAGAIN);
    struct iovec one = {buf, sizeof buf};
    CHECK_ERRNO(readv(rs[0], &one, 1), EAGAIN);
    CHECK_SYS(fcntl(rs[0], F_SETFL, fl));
    // Blocking: the reader waits for the peer's two bytes, then for its close (EOF: 0).
    pthread_t t = compat_spawn(close_peer, NULL);
    size_t got = 0;
    while (got < 2) {
        ssize_t n = read(rs[0], buf + got, sizeof buf - got);
        CHECK(n > 0, "read returned %zd before the peer's data", n);
        got += (size_t)n;
    }
    CHECK(memcmp(buf, "ab", 2) == 0, "data");
    CHECK(read(rs[0], buf, sizeof buf) == 0, "expected EOF after the peer closed");
    compat_join(t);
    close(rs[0]);

    // A zero-length read leaves the datagram queued; readv scatters it.
    CHECK_SYS(socketpair(AF_UNIX, SOCK_DGRAM, 0, rs));
    CHECK(send(rs[1], "hello", 5, 0) == 5, "dgram send");
    CHECK(read(rs[0], buf, 0) == 0, "zero-length read");
    char a[2], b[8];
    struct iovec two[2] = {{a, sizeof a}, {b, sizeof b}};
    CHECK(readv(rs[0], two, 2) == 5, "readv of the datagram");
    CHECK(memcmp(a, "he", 2) == 0 && memcmp(b, "llo", 3) == 0, "readv scatter");
    close(rs[0]);
    close(rs[1]);

    // A pipe's read end (read there first), closed; a socket takes its number and still waits.
    int p[2];
    CHECK_SYS(pipe(p));
    CHECK(write(p[1], "x", 1) == 1, "pipe write");
    CHECK(read(p[0], buf, 1) == 1, "pipe read");
    int num = p[0];
    close(p[0]);
    close(p[1]);
    CHECK_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, rs));
    if (rs[0] != num && rs[1] == num) {  // keep the reused number on the reading side
        int tmp = rs[0];
        rs[0] = rs[1];
        rs[1] = tmp;
    }
    CHECK(rs[0] == num, "descriptor %d not reused (got %d, %d)", num, rs[0], rs[1]);
    t = compat_spawn(close_peer, NULL);
    got = 0;
    while (got < 2) {
        ssize_t n = read(rs[0], buf + got, sizeof buf - got);
        CHECK(n > 0, "read on the reused number returned %zd", n);
        got += (size_t)n;
    }
    CHECK(read(rs[0], buf, sizeof buf) == 0, "EOF on the reused number");
    compat_join(t);
    close(rs[0]);
    // And back: a pipe on a number a socket used reads as a pipe (ENOTSOCK path).
    CHECK_SYS(pipe(p));
    CHECK(write(p[1], "yz", 2) == 2, "pipe write");
    CHECK(read(p[0], buf, sizeof buf) == 2, "pipe read after socket");
    close(p[0]);
    close(p[1]);
}

int main(void) {
    compat_start("socketpair");
    CHECK_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    char probe;
    CHECK_ERRNO(recv(sv[0], &probe, 1, MSG_DONTWAIT), EAGAIN);
    pthread_t t = compat_spawn(stream_peer, NULL);
    char msg[64];
    memset(msg, 'x', sizeof msg);
    for (int i = 0; i < TRIPS; i++) {
        msg[0] = (char)i;
        CHECK(send(sv[0], msg, sizeof msg, 0) == sizeof msg, "send");
        CHECK(recv(sv[0], msg, sizeof msg, MSG_WAITALL) == sizeof msg, "recv");
        CHECK(msg[0] == (char)(i + 1) && msg[63] == 'x', "round trip %d corrupted", i);
    }
    CHECK_SYS(shutdown(sv[0], SHUT_WR));
    compat_join(t);
    close(sv[0]);
    close(sv[1]);

    int types[2] = {SOCK_SEQPACKET, SOCK_DGRAM};
    for (int k = 0; k < 2; k++) {
        CHECK_SYS(socketpair(AF_UNIX, types[k], 0, pk));
        t = compat_spawn(packet_peer, NULL);
        char buf[128];
        for (int i = 1; i <= 100; i++) {
            ssize_t n = recv(pk[0], buf, sizeof buf, 0);
            CHECK(n == i, "type %d: message %d has length %zd", types[k], i, n);
        }
        compat_join(t);
        close(pk[0]);
        close(pk[1]);
    }
    read_on_sockets();
    waitall_in_pieces();
    return compat_ok();
}
