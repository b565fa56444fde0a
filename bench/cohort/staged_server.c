// A staged thread-per-request server for cohort dispatch (bench/cohort/run.sh): one thread per
// connection, each request going through three stages that each end in a blocking call, as in
// Larus & Parkes' servers:
//
//   parse    decode the request (its own code and table)          -> nanosleep (storage read)
//   lookup   find and transform the value (own code and table)    -> nanosleep (log commit)
//   reply    format and checksum the answer (own code and table)  -> send, then recv (next request)
//
// Each stage runs about 20 KiB of straight-line code of its own over a 16 KiB table of its own,
// so one stage fits in a core's L1 caches (32 KiB each here) but three interleaved stages do not:
// running the same stage of many requests back to back (cohort dispatch) can keep them there.
// Synthetic by design; the I/O waits are sleeps (--io-us).
//
// Protocol (one request outstanding per connection): "get key:N\r\n" ->
// "VALUE key:N 0 64\r\n<64 bytes>\r\nEND\r\n".
// Usage: staged_server [--port P] [--io-us US]. Prints "port P" on stdout once listening (P = 0
// picks a free one) and serves until SIGTERM or SIGINT, then exits normally (so that exit
// handlers, such as arbrun's --stats, run).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { kTableWords = 2048, kValueBytes = 64 };  // 16 KiB table per stage

static uint64_t gParseTable[kTableWords], gLookupTable[kTableWords], gReplyTable[kTableWords];
static long gIoNs = 20000;

// One step of a stage: a table load and a multiply with constants that differ per step, so the
// compiler keeps every step as its own code (about 24 bytes each).
#define STEP(t, k)                                                                  \
    h = (h ^ t[(h + (k)) & (kTableWords - 1)]) * (0x9E3779B97F4A7C15ull + 2 * (k)); \
    h ^= h >> (((k) % 29) + 3);
#define S4(t, k) STEP(t, k) STEP(t, k + 1) STEP(t, k + 2) STEP(t, k + 3)
#define S16(t, k) S4(t, k) S4(t, k + 4) S4(t, k + 8) S4(t, k + 12)
#define S64(t, k) S16(t, k) S16(t, k + 16) S16(t, k + 32) S16(t, k + 48)
#define S256(t, k) S64(t, k) S64(t, k + 64) S64(t, k + 128) S64(t, k + 192)
#define S512(t, k) S256(t, k) S256(t, k + 256)

// The three stages' compute: 512 dependent steps each (about 20 KiB of code), distinct per stage.
__attribute__((noinline)) static uint64_t parseStage(uint64_t h) {
    S512(gParseTable, 1)
    return h;
}
__attribute__((noinline)) static uint64_t lookupStage(uint64_t h) {
    S512(gLookupTable, 5001)
    return h;
}
__attribute__((noinline)) static uint64_t replyStage(uint64_t h) {
    S512(gReplyTable, 10007)
    return h;
}

// The stand-in for a storage or log I/O: a blocking wait of --io-us.
static void ioWait(void) {
    struct timespec ts = {0, gIoNs};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

// Reads one request line ("get key:N\r\n") into buf; returns its key, or -1 when the peer closed.
static long readRequest(int fd, char* buf, size_t cap) {
    size_t len = 0;
    for (;;) {
        const ssize_t n = recv(fd, buf + len, cap - 1 - len, 0);
        if (n <= 0) return -1;
        len += (size_t)n;
        buf[len] = 0;
        char* end = strstr(buf, "\r\n");
        if (end) {
            const char* k = strstr(buf, "key:");
            return k ? strtol(k + 4, NULL, 10) : 0;
        }
        if (len >= cap - 1) return -1;
    }
}

static int sendAll(int fd, const char* p, size_t len) {
    while (len > 0) {
        const ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n <= 0) return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

// One connection's thread: request after request, each through the three stages.
static void* serve(void* arg) {
    const int fd = (int)(intptr_t)arg;
    prctl(PR_SET_TIMERSLACK, 1000UL);  // 1 us, so native sleeps are as short as arbrun's timers
    char req[256], reply[256];
    long key;
    while ((key = readRequest(fd, req, sizeof req)) >= 0) {
        uint64_t h = parseStage((uint64_t)key * 0x2545F4914F6CDD1Dull + 1);
        ioWait();
        h = lookupStage(h);
        ioWait();
        h = replyStage(h);
        char value[kValueBytes + 1];
        for (int i = 0; i < kValueBytes; ++i)
            value[i] = "0123456789abcdef"[(h >> (i % 16 * 4)) & 15];
        value[kValueBytes] = 0;
        const int n = snprintf(reply, sizeof reply, "VALUE key:%ld 0 %d\r\n%s\r\nEND\r\n", key,
                               kValueBytes, value);
        if (sendAll(fd, reply, (size_t)n) != 0) break;
    }
    close(fd);
    return NULL;
}

static volatile sig_atomic_t gStop;

static void onStop(int sig) {
    (void)sig;
    gStop = 1;
}

int main(int argc, char** argv) {
    int port = 0;
    struct sigaction sa = {.sa_handler = onStop};  // no SA_RESTART: accept fails with EINTR
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--port") && i + 1 < argc) {
            port = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--io-us") && i + 1 < argc) {
            gIoNs = atol(argv[++i]) * 1000;
        } else {
            fprintf(stderr, "staged_server: usage: staged_server [--port P] [--io-us US]\n");
            return 2;
        }
    }
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < kTableWords; ++i) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        gParseTable[i] = x;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        gLookupTable[i] = x;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        gReplyTable[i] = x;
    }
    const int ls = socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(ls, (struct sockaddr*)&addr, sizeof addr) != 0 || listen(ls, 1024) != 0) {
        perror("staged_server: bind/listen");
        return 1;
    }
    socklen_t alen = sizeof addr;
    getsockname(ls, (struct sockaddr*)&addr, &alen);
    printf("port %d\n", ntohs(addr.sin_port));
    fflush(stdout);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    while (!gStop) {
        const int fd = accept(ls, NULL, NULL);
        if (fd < 0) continue;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        pthread_t t;
        if (pthread_create(&t, &attr, serve, (void*)(intptr_t)fd) != 0) close(fd);
    }
    exit(0);
}
