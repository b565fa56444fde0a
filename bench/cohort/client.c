// Closed-loop client for staged_server.c (bench/cohort/run.sh): CONNECTIONS connections, each
// with one request outstanding, sent again as soon as its answer arrives; one epoll thread.
// Requests answered during the first WARMUP seconds are not counted.
//
// Usage: client --port P [--connections C] [--duration S] [--warmup S] [--requests N]
//   --requests N stops after N answered requests in all (counted ones) instead of after S.
// Prints: "client: requests N rps X p50_us Y p99_us Z".
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { kMaxConns = 1024, kBuf = 4096 };

typedef struct {
    int fd;
    uint64_t sentNs;
    long key;
    char in[kBuf];
    size_t len;
} Conn;

static Conn conns[kMaxConns];

static uint64_t nowNs(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sendRequest(Conn* c) {
    char req[64];
    const int n = snprintf(req, sizeof req, "get key:%ld\r\n", c->key);
    c->sentNs = nowNs();
    if (send(c->fd, req, (size_t)n, MSG_NOSIGNAL) != n) {
        perror("client: send");
        exit(1);
    }
}

static int cmpU64(const void* a, const void* b) {
    const uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
    int port = 0, nconns = 32;
    double duration = 5, warmup = 1;
    long limit = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--port"))
            port = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--connections"))
            nconns = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--duration"))
            duration = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--warmup"))
            warmup = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--requests"))
            limit = atol(argv[i + 1]);
        else {
            fprintf(stderr, "client: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (port <= 0 || nconns < 1 || nconns > kMaxConns) {
        fprintf(stderr, "client: usage: client --port P [--connections 1-1024] ...\n");
        return 2;
    }
    const int ep = epoll_create1(0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int i = 0; i < nconns; ++i) {
        Conn* c = &conns[i];
        c->fd = socket(AF_INET, SOCK_STREAM, 0);
        const int one = 1;
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(c->fd, (struct sockaddr*)&addr, sizeof addr) != 0) {
            perror("client: connect");
            return 1;
        }
        c->key = i * 7919;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
    }
    size_t cap = 1 << 20, count = 0;
    uint64_t* lat = malloc(cap * sizeof *lat);
    const uint64_t start = nowNs();
    const uint64_t countFrom = start + (uint64_t)(warmup * 1e9);
    const uint64_t stop = countFrom + (uint64_t)(duration * 1e9);
    uint64_t countStart = 0, last = 0;
    for (int i = 0; i < nconns; ++i) sendRequest(&conns[i]);
    struct epoll_event events[64];
    for (;;) {
        const int n = epoll_wait(ep, events, 64, 100);
        const uint64_t t = nowNs();
        if (limit ? (long)count >= limit : t >= stop) break;
        for (int e = 0; e < n; ++e) {
            Conn* c = events[e].data.ptr;
            const ssize_t r = recv(c->fd, c->in + c->len, kBuf - 1 - c->len, 0);
            if (r <= 0) {
                fprintf(stderr, "client: server closed a connection\n");
                return 1;
            }
            c->len += (size_t)r;
            c->in[c->len] = 0;
            if (!strstr(c->in, "END\r\n")) continue;
            c->len = 0;
            if (c->sentNs >= countFrom) {
                if (countStart == 0) countStart = c->sentNs;
                if (count == cap) lat = realloc(lat, (cap *= 2) * sizeof *lat);
                lat[count++] = t - c->sentNs;
                last = t;
            }
            c->key += 1;
            sendRequest(c);
        }
    }
    if (count == 0) {
        fprintf(stderr, "client: no request answered\n");
        return 1;
    }
    qsort(lat, count, sizeof *lat, cmpU64);
    const double secs = (double)(last - countStart) / 1e9;
    printf("client: requests %zu rps %.0f p50_us %.1f p99_us %.1f\n", count,
           secs > 0 ? (double)count / secs : 0.0, (double)lat[count / 2] / 1e3,
           (double)lat[count * 99 / 100] / 1e3);
    return 0;
}
