// Request/response over TCP on 127.0.0.1 with a thread per connection and blocking sockets, the
// shape of a thread-per-connection server (MariaDB, a legacy C++ server): each server thread
// reads a request with read() and answers it with write(); each client thread sends a request and
// reads the whole answer before the next (closed loop, TCP_NODELAY on both sides).
//
// Usage: conn_rr server PORT_FILE CONNS SIZE
//          listens on an ephemeral port, writes it to PORT_FILE, serves CONNS connections, and
//          exits once all have closed, printing "server_cpu_us N" (its own user + system time)
//        conn_rr client PORT CONNS SECONDS SIZE
//          prints "round_trips N us_per_round_trip X" (each connection makes at least one)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { MAX_CONNS = 64, MAX_SIZE = 65536 };

static size_t size;
static double seconds;
static int port;
static long counts[MAX_CONNS];

static void die(const char* what) {
    perror(what);
    exit(1);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

// Reads exactly `n` bytes; 0 at a clean end of stream before any byte.
static int read_all(int fd, char* buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        const ssize_t r = read(fd, buf + got, n - got);
        if (r == 0 && got == 0) return 0;
        if (r <= 0) die("read");
        got += (size_t)r;
    }
    return 1;
}

static void write_all(int fd, const char* buf, size_t n) {
    if (write(fd, buf, n) != (ssize_t)n) die("write");  // blocking: all or an error
}

static void* serve(void* arg) {
    const int fd = (int)(long)arg;
    char* buf = malloc(size);
    if (!buf) die("malloc");
    while (read_all(fd, buf, size)) write_all(fd, buf, size);
    free(buf);
    close(fd);
    return NULL;
}

static void nodelay(int fd) {
    const int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) die("TCP_NODELAY");
}

static void* client(void* arg) {
    const long i = (long)arg;
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr*)&to, sizeof to) != 0) die("connect");
    nodelay(fd);
    char* buf = calloc(1, size);
    if (!buf) die("calloc");
    const double end = now() + seconds;
    long n = 0;
    do {  // at least one round trip, even when a loaded host starts this thread late
        write_all(fd, buf, size);
        if (!read_all(fd, buf, size)) die("server closed");
        ++n;
    } while (now() < end);
    counts[i] = n;
    free(buf);
    close(fd);
    return NULL;
}

static int run_server(const char* portFile, int conns) {
    const int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in at = {.sin_family = AF_INET, .sin_port = 0};
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof at;
    if (l < 0 || bind(l, (struct sockaddr*)&at, sizeof at) != 0 || listen(l, conns) != 0 ||
        getsockname(l, (struct sockaddr*)&at, &len) != 0) {
        die("listen");
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", portFile);
    FILE* f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", ntohs(at.sin_port)) < 0 || fclose(f) != 0 ||
        rename(tmp, portFile) != 0) {
        die(portFile);
    }
    pthread_t threads[MAX_CONNS];
    for (int i = 0; i < conns; ++i) {
        const int c = accept(l, NULL, NULL);
        if (c < 0) die("accept");
        nodelay(c);
        if (pthread_create(&threads[i], NULL, serve, (void*)(long)c) != 0) die("pthread_create");
    }
    close(l);
    for (int i = 0; i < conns; ++i) pthread_join(threads[i], NULL);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("server_cpu_us %ld\n", (long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
                                      ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
    return 0;
}

int main(int argc, char** argv) {
    const int isServer = argc == 5 && strcmp(argv[1], "server") == 0;
    const int isClient = argc == 6 && strcmp(argv[1], "client") == 0;
    if (!isServer && !isClient) {
        fprintf(stderr,
                "usage: conn_rr server PORT_FILE CONNS SIZE | client PORT CONNS SECONDS SIZE\n");
        return 2;
    }
    const int conns = atoi(argv[3]);
    size = (size_t)atol(argv[isServer ? 4 : 5]);
    if (conns < 1 || conns > MAX_CONNS || size < 1 || size > MAX_SIZE) {
        fprintf(stderr, "conn_rr: CONNS must be 1-%d and SIZE 1-%d\n", MAX_CONNS, MAX_SIZE);
        return 2;
    }
    if (isServer) return run_server(argv[2], conns);
    port = atoi(argv[2]);
    seconds = atof(argv[4]);
    if (port < 1 || port > 65535 || !(seconds > 0)) {
        fprintf(stderr, "conn_rr: bad PORT or SECONDS\n");
        return 2;
    }
    pthread_t threads[MAX_CONNS];
    for (long i = 0; i < conns; ++i) {
        if (pthread_create(&threads[i], NULL, client, (void*)i) != 0) die("pthread_create");
    }
    long total = 0;
    for (int i = 0; i < conns; ++i) {
        pthread_join(threads[i], NULL);
        total += counts[i];
    }
    if (total == 0) {
        fprintf(stderr, "conn_rr: no round trip completed\n");
        return 1;
    }
    printf("round_trips %ld us_per_round_trip %.2f\n", total,
           seconds * 1e6 * conns / (double)total);
    return 0;
}
