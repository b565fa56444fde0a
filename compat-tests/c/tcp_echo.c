// tcp_echo: TCP on 127.0.0.1 port 0 (the kernel picks a free port; getsockname reports it) — an
// acceptor thread accepts 8 clients and starts an echo thread per connection; 8 client threads
// connect, each sends 256 KiB in chunks and reads it back concurrently (a reader thread per
// client so neither side deadlocks on full buffers); payloads compared byte for byte.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "../common/compat.h"

enum { CLIENTS = 8, BYTES = 256 * 1024 };
static int listener;
static struct sockaddr_in addr;

static void* echo_conn(void* arg) {
    int fd = (int)(intptr_t)arg;
    char buf[8192];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        ssize_t off = 0;
        while (off < n) {
            ssize_t w = write(fd, buf + off, (size_t)(n - off));
            CHECK(w > 0, "echo write errno %d", errno);
            off += w;
        }
    }
    CHECK(n == 0, "echo read errno %d", errno);
    close(fd);
    return NULL;
}

static void* acceptor(void* arg) {
    (void)arg;
    pthread_t conns[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        int fd = accept(listener, NULL, NULL);
        CHECK(fd >= 0, "accept errno %d", errno);
        conns[i] = compat_spawn(echo_conn, (void*)(intptr_t)fd);
    }
    for (int i = 0; i < CLIENTS; i++) compat_join(conns[i]);
    return NULL;
}

static unsigned char pattern(int client, size_t i) {
    return (unsigned char)(i * 7 + (size_t)client * 13 + (i >> 9));
}

struct client {
    int id, fd;
    size_t received;
    int bad;
};

static void* client_reader(void* arg) {
    struct client* c = (struct client*)arg;
    unsigned char buf[8192];
    ssize_t n;
    while ((n = read(c->fd, buf, sizeof buf)) > 0) {
        for (ssize_t k = 0; k < n; k++)
            if (buf[k] != pattern(c->id, c->received + (size_t)k)) c->bad = 1;
        c->received += (size_t)n;
    }
    return NULL;
}

static void* client(void* arg) {
    struct client* c = (struct client*)arg;
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(c->fd >= 0, "socket");
    CHECK_SYS(connect(c->fd, (struct sockaddr*)&addr, sizeof addr));
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    pthread_t r = compat_spawn(client_reader, c);
    unsigned char buf[3000];
    size_t sent = 0;
    while (sent < BYTES) {
        size_t n = BYTES - sent < sizeof buf ? BYTES - sent : sizeof buf;
        for (size_t k = 0; k < n; k++) buf[k] = pattern(c->id, sent + k);
        size_t off = 0;
        while (off < n) {
            ssize_t w = send(c->fd, buf + off, n - off, 0);
            CHECK(w > 0, "client send errno %d", errno);
            off += (size_t)w;
        }
        sent += n;
    }
    CHECK_SYS(shutdown(c->fd, SHUT_WR));
    compat_join(r);
    close(c->fd);
    return NULL;
}

int main(void) {
    compat_start("tcp_echo");
    listener = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(listener >= 0, "socket");
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    CHECK_SYS(bind(listener, (struct sockaddr*)&addr, sizeof addr));
    CHECK_SYS(listen(listener, 64));
    socklen_t len = sizeof addr;
    CHECK_SYS(getsockname(listener, (struct sockaddr*)&addr, &len));
    CHECK(ntohs(addr.sin_port) != 0, "no port assigned");

    pthread_t acc = compat_spawn(acceptor, NULL);
    struct client cs[CLIENTS];
    pthread_t ct[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        cs[i] = (struct client){i, -1, 0, 0};
        ct[i] = compat_spawn(client, &cs[i]);
    }
    for (int i = 0; i < CLIENTS; i++) {
        compat_join(ct[i]);
        CHECK(cs[i].received == BYTES, "client %d got %zu bytes", i, cs[i].received);
        CHECK(!cs[i].bad, "client %d got corrupted data", i);
    }
    compat_join(acc);
    close(listener);
    return compat_ok();
}
