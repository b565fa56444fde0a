// socketpair: AF_UNIX socketpairs between threads — SOCK_STREAM ping-pong of 5,000 messages with
// send/recv (MSG_WAITALL for a 64-byte message), SOCK_SEQPACKET keeps message boundaries,
// SOCK_DGRAM one message per recv; MSG_DONTWAIT gives EAGAIN on an empty socket; shutdown gives
// EOF to the peer.
#include <sys/socket.h>

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
    return compat_ok();
}
