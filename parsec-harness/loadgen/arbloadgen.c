// arbloadgen: an open-loop load generator for key-value servers: memcached's text protocol or
// redis's RESP (--protocol memcached | redis).
//
// Requests are scheduled at Poisson arrival times (exponential gaps from a fixed seed) at a rate
// that steps through RATE[:RATE...] (each step lasts DURATION / steps), sent round-robin over
// several TCP connections (pipelined: both servers answer in order on a connection), and timed from
// their *scheduled* send time, so a server or a generator that falls behind shows up as latency
// (no coordinated omission). Before the measurement every key is set once (closed loop).
//
// Output: --log FILE gets one line per answered request, "SCHED_US LATENCY_US" (the scheduled time
// since the start of the measurement and the latency, both in microseconds); stdout gets one
// summary line:
//   arbloadgen: sent N answered N errors N lost N p50_us X p99_us Y p999_us Z start_s T
// (T: the measurement's start on CLOCK_MONOTONIC, to line the log up with other timelines).
// Exit status: 0 ok, 1 the server could not be reached or broke a connection, 2 bad options.
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { kMaxConns = 256, kMaxRates = 64, kBuf = 1 << 16 };

typedef struct {
    uint64_t* sched;  // scheduled send times (ns) of outstanding requests, FIFO ring
    size_t cap, head, count;
    char out[kBuf];  // unsent request bytes
    size_t out_len;
    char in[kBuf];  // unparsed response bytes
    size_t in_len;
    int fd;
    int want_out;  // EPOLLOUT registered
} Conn;

static Conn conns[kMaxConns];
static int nconns = 8;
static double rates[kMaxRates];
static int nrates;
static double duration_s = 10;
static long nkeys = 10000;
static int value_size = 64;
static double get_ratio = 0.9;
static uint64_t seed = 1;
static const char* host = "127.0.0.1";
static const char* port = NULL;
static const char* log_path = NULL;
static double drain_s = 1.0;

// The wire protocol: how requests are written and answers parsed (--protocol).
typedef enum { kMemcached, kRedis } Protocol;
static Protocol protocol = kMemcached;

static FILE* log_file;
static uint64_t* lat;  // every latency (ns), for the summary
static size_t nlat, caplat;
static uint64_t sent, answered, errors;
static uint64_t t0;
static char value_buf[1 << 20];

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

// xoshiro256** from a splitmix64-expanded seed: deterministic across machines.
static uint64_t rng_s[4];
static uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}
static uint64_t rng_next(void) {
    const uint64_t result = rotl(rng_s[1] * 5, 7) * 9, t = rng_s[1] << 17;
    rng_s[2] ^= rng_s[0];
    rng_s[3] ^= rng_s[1];
    rng_s[1] ^= rng_s[2];
    rng_s[0] ^= rng_s[3];
    rng_s[2] ^= t;
    rng_s[3] = rotl(rng_s[3], 45);
    return result;
}
static void rng_seed(uint64_t s) {
    for (int i = 0; i < 4; i++) {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        rng_s[i] = z ^ (z >> 31);
    }
}
static double rng_unit(void) {
    return (double)(rng_next() >> 11) * (1.0 / 9007199254740992.0);
}

static void die(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(int code, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("arbloadgen: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(code);
}

static void usage(FILE* f) {
    fputs(
        "Usage: arbloadgen --port PORT [--host ADDR] --rate R[:R...] [--duration S]\n"
        "                  [--protocol P] [--connections N] [--keys K] [--value-size B]\n"
        "                  [--get-ratio F] [--seed N] [--drain S] [--log FILE]\n"
        "Open-loop Poisson load on a key-value server over TCP: gets and sets of one value size.\n"
        "  --protocol P      memcached (text protocol, default) or redis (RESP: GET and SET)\n"
        "  --rate R[:R...]   requests per second; several rates are steps of equal length\n"
        "  --duration S      measured seconds in all (default 10)\n"
        "  --connections N   TCP connections, requests round-robin (default 8, max 256)\n"
        "  --keys K          distinct keys, each set once before the measurement (default 10000)\n"
        "  --value-size B    bytes per value (default 64)\n"
        "  --get-ratio F     fraction of gets, the rest are sets (default 0.9)\n"
        "  --seed N          arrival times, keys and operations derive from it (default 1)\n"
        "  --drain S         seconds to wait for outstanding answers at the end (default 1)\n"
        "  --log FILE        one line per answered request: SCHED_US LATENCY_US\n"
        "Prints: arbloadgen: sent N answered N errors N lost N p50_us X p99_us Y p999_us Z start_s "
        "T\n"
        "        (T: the measurement's start on CLOCK_MONOTONIC)\n",
        f);
}

static double parse_double(const char* s, const char* what, double lo, double hi) {
    char* end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        die(2, "%s: '%s' is not a number in [%g, %g]", what, s, lo, hi);
    return v;
}

static void parse_rates(const char* s) {
    char* copy = strdup(s);
    char* save = NULL;
    for (char* tok = strtok_r(copy, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) {
        if (nrates == kMaxRates) die(2, "--rate: at most %d steps", kMaxRates);
        rates[nrates++] = parse_double(tok, "--rate", 1, 1e7);
    }
    if (nrates == 0) die(2, "--rate: give at least one rate");
    free(copy);
}

static int connect_to(void) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc) die(1, "cannot resolve %s:%s: %s", host, port, gai_strerror(rc));
    int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) < 0)
        die(1, "cannot connect to %s:%s: %s", host, port, strerror(errno));
    freeaddrinfo(res);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static void write_all(int fd, const char* p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) die(1, "write to the server failed: %s", strerror(errno));
        p += w;
        n -= (size_t)w;
    }
}

// Reads until the buffer holds a complete line ending in "\r\n"; returns its length (with CRLF).
static size_t read_line(int fd, char* buf, size_t* len) {
    for (;;) {
        char* nl = memmem(buf, *len, "\r\n", 2);
        if (nl) return (size_t)(nl - buf) + 2;
        if (*len == kBuf) die(1, "answer line too long");
        ssize_t r = read(fd, buf + *len, kBuf - *len);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) die(1, "the server closed the connection while loading keys");
        *len += (size_t)r;
    }
}

// A set of KEY to the value, in the protocol's request form; returns its length.
static int make_set(char* out, size_t cap, long key) {
    int n;
    if (protocol == kRedis) {
        char k[32];
        int klen = snprintf(k, sizeof k, "key:%ld", key);
        n = snprintf(out, cap, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n", klen, k, value_size);
    } else {
        n = snprintf(out, cap, "set key:%ld 0 0 %d\r\n", key, value_size);
    }
    memcpy(out + n, value_buf, (size_t)value_size);
    memcpy(out + n + value_size, "\r\n", 2);
    return n + value_size + 2;
}

// A get of KEY in the protocol's request form; returns its length.
static int make_get(char* out, size_t cap, long key) {
    if (protocol == kRedis) {
        char k[32];
        int klen = snprintf(k, sizeof k, "key:%ld", key);
        return snprintf(out, cap, "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", klen, k);
    }
    return snprintf(out, cap, "get key:%ld\r\n", key);
}

// The answer a stored set gets.
static const char* stored_answer(void) {
    return protocol == kRedis ? "+OK\r\n" : "STORED\r\n";
}

// Sets every key once, closed loop, on the first connection.
static void load_keys(void) {
    Conn* c = &conns[0];
    char req[kBuf];
    for (long k = 0; k < nkeys; k++) {
        int n = make_set(req, sizeof req, k);
        write_all(c->fd, req, (size_t)n);
        size_t line = read_line(c->fd, c->in, &c->in_len);
        const char* want = stored_answer();
        if (line != strlen(want) || memcmp(c->in, want, line) != 0)
            die(1, "loading key %ld: unexpected answer '%.*s'", k, (int)line - 2, c->in);
        memmove(c->in, c->in + line, c->in_len - line);
        c->in_len -= line;
    }
}

static void record(uint64_t sched, uint64_t done) {
    uint64_t l = done > sched ? done - sched : 0;
    if (nlat == caplat) {
        caplat = caplat ? caplat * 2 : 1 << 16;
        lat = realloc(lat, caplat * sizeof *lat);
        if (!lat) die(1, "out of memory");
    }
    lat[nlat++] = l;
    answered++;
    if (log_file) fprintf(log_file, "%.1f %.1f\n", (double)(sched - t0) / 1e3, (double)l / 1e3);
}

// Length of one complete memcached answer at p (avail bytes), 0 while incomplete; *error is set
// for an error answer (SERVER_ERROR, NOT_STORED, ...: it still answers one request).
static size_t memcached_answer(const char* p, size_t avail, int* error) {
    const char* nl = memmem(p, avail, "\r\n", 2);
    if (!nl) return 0;
    size_t line = (size_t)(nl - p) + 2;
    *error = 0;
    if (line >= 6 && memcmp(p, "VALUE ", 6) == 0) {
        // VALUE key flags bytes\r\n data\r\n END\r\n
        const char* q = nl;
        while (q > p && q[-1] != ' ') q--;
        unsigned long bytes = strtoul(q, NULL, 10);
        size_t need = line + bytes + 2 + 5;
        if (avail < need) return 0;
        if (memcmp(p + line + bytes, "\r\nEND\r\n", 7) != 0) die(1, "malformed VALUE answer");
        return need;
    }
    if (!((line == 5 && memcmp(p, "END\r\n", 5) == 0) ||
          (line == 8 && memcmp(p, "STORED\r\n", 8) == 0)))
        *error = 1;
    return line;
}

// Length of one complete RESP answer to GET or SET at p, 0 while incomplete: +OK, $-1 (no such
// key), $N with N bytes, or an error (-ERR ..., *error set). Arrays are never an answer here.
static size_t redis_answer(const char* p, size_t avail, int* error) {
    const char* nl = memmem(p, avail, "\r\n", 2);
    if (!nl) return 0;
    size_t line = (size_t)(nl - p) + 2;
    *error = 0;
    switch (p[0]) {
        case '+':
        case ':':
            return line;
        case '-':
            *error = 1;
            return line;
        case '$': {
            char* end;
            long n = strtol(p + 1, &end, 10);
            if (end != nl || n < -1) die(1, "malformed RESP bulk answer '%.*s'", (int)line - 2, p);
            if (n == -1) return line;
            size_t need = line + (size_t)n + 2;
            if (avail < need) return 0;
            if (memcmp(p + line + n, "\r\n", 2) != 0) die(1, "malformed RESP bulk answer");
            return need;
        }
        default:
            die(1, "unexpected RESP answer '%.*s'", (int)line - 2, p);
    }
}

// Consumes complete answers in c->in; each completes the oldest outstanding request.
static void parse_answers(Conn* c, uint64_t now) {
    size_t pos = 0;
    for (;;) {
        const char* p = c->in + pos;
        size_t avail = c->in_len - pos;
        int error = 0;
        size_t consumed = protocol == kRedis ? redis_answer(p, avail, &error)
                                             : memcached_answer(p, avail, &error);
        if (consumed == 0) break;
        errors += (uint64_t)error;
        if (c->count == 0)
            die(1, "answer without a request: '%.*s'", (int)(consumed > 40 ? 40 : consumed), p);
        uint64_t sched = c->sched[c->head];
        c->head = (c->head + 1) % c->cap;
        c->count--;
        record(sched, now);
        pos += consumed;
    }
    memmove(c->in, c->in + pos, c->in_len - pos);
    c->in_len -= pos;
}

static void push_sched(Conn* c, uint64_t t) {
    if (c->count == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 1024;
        uint64_t* n = malloc(ncap * sizeof *n);
        if (!n) die(1, "out of memory");
        for (size_t i = 0; i < c->count; i++) n[i] = c->sched[(c->head + i) % c->cap];
        free(c->sched);
        c->sched = n;
        c->cap = ncap;
        c->head = 0;
    }
    c->sched[(c->head + c->count) % c->cap] = t;
    c->count++;
}

static void flush_out(int ep, Conn* c) {
    while (c->out_len) {
        ssize_t w = send(c->fd, c->out, c->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (w <= 0) die(1, "send to the server failed: %s", strerror(errno));
        memmove(c->out, c->out + w, c->out_len - (size_t)w);
        c->out_len -= (size_t)w;
    }
    int want = c->out_len > 0;
    if (want != c->want_out) {
        struct epoll_event ev = {.events = EPOLLIN | (want ? EPOLLOUT : 0), .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        c->want_out = want;
    }
}

static int cmp_u64(const void* a, const void* b) {
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
    return x < y ? -1 : x > y;
}

static double quantile_us(double q) {
    if (nlat == 0) return 0;
    size_t i = (size_t)ceil(q * (double)nlat);
    if (i > 0) i--;
    if (i >= nlat) i = nlat - 1;
    return (double)lat[i] / 1e3;
}

int main(int argc, char** argv) {
    static const struct option opts[] = {
        {"host", required_argument, 0, 'H'},        {"port", required_argument, 0, 'p'},
        {"rate", required_argument, 0, 'r'},        {"duration", required_argument, 0, 'd'},
        {"connections", required_argument, 0, 'c'}, {"keys", required_argument, 0, 'k'},
        {"value-size", required_argument, 0, 'v'},  {"get-ratio", required_argument, 0, 'g'},
        {"seed", required_argument, 0, 's'},        {"log", required_argument, 0, 'l'},
        {"drain", required_argument, 0, 'D'},       {"help", no_argument, 0, 'h'},
        {"protocol", required_argument, 0, 'P'},    {0, 0, 0, 0}};
    int o;
    opterr = 0;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
            case 'H':
                host = optarg;
                break;
            case 'p':
                port = optarg;
                parse_double(optarg, "--port", 1, 65535);
                break;
            case 'r':
                parse_rates(optarg);
                break;
            case 'd':
                duration_s = parse_double(optarg, "--duration", 0.1, 86400);
                break;
            case 'c':
                nconns = (int)parse_double(optarg, "--connections", 1, kMaxConns);
                break;
            case 'k':
                nkeys = (long)parse_double(optarg, "--keys", 1, 1e8);
                break;
            case 'v':
                value_size = (int)parse_double(optarg, "--value-size", 1, 500000);
                break;
            case 'g':
                get_ratio = parse_double(optarg, "--get-ratio", 0, 1);
                break;
            case 's':
                seed = (uint64_t)parse_double(optarg, "--seed", 0, 1e18);
                break;
            case 'l':
                log_path = optarg;
                break;
            case 'D':
                drain_s = parse_double(optarg, "--drain", 0, 600);
                break;
            case 'P':
                if (strcmp(optarg, "memcached") == 0)
                    protocol = kMemcached;
                else if (strcmp(optarg, "redis") == 0)
                    protocol = kRedis;
                else
                    die(2, "--protocol: '%s' is not memcached or redis", optarg);
                break;
            case 'h':
                usage(stdout);
                return 0;
            default:
                die(2, "unknown option or missing value: '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc) die(2, "unexpected argument '%s' (see --help)", argv[optind]);
    if (!port) die(2, "--port is required (see --help)");
    if (nrates == 0) die(2, "--rate is required (see --help)");
    signal(SIGPIPE, SIG_IGN);
    if (log_path && !(log_file = fopen(log_path, "w")))
        die(2, "cannot write %s: %s", log_path, strerror(errno));
    for (int i = 0; i < value_size; i++) value_buf[i] = (char)('a' + i % 26);
    rng_seed(seed);

    for (int i = 0; i < nconns; i++) conns[i].fd = connect_to();
    load_keys();
    int ep = epoll_create1(EPOLL_CLOEXEC);
    for (int i = 0; i < nconns; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &conns[i]};
        epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev);
    }

    t0 = now_ns();
    const uint64_t total_ns = (uint64_t)(duration_s * 1e9);
    const uint64_t step_ns = total_ns / (uint64_t)nrates;
    const uint64_t end = t0 + total_ns;
    uint64_t next = t0;  // scheduled time of the next request
    int rr = 0, sending = 1;
    uint64_t drain_end = 0;
    struct epoll_event evs[64];
    char req[kBuf];
    // First gap.
    next += (uint64_t)(-log(1.0 - rng_unit()) / rates[0] * 1e9);
    for (;;) {
        uint64_t now = now_ns();
        if (sending) {
            while (next <= now && next < end) {
                Conn* c = &conns[rr];
                rr = (rr + 1) % nconns;
                long key = (long)(rng_next() % (uint64_t)nkeys);
                int n;
                if (rng_unit() < get_ratio)
                    n = make_get(req, sizeof req, key);
                else
                    n = make_set(req, sizeof req, key);
                if (c->out_len + (size_t)n > kBuf) flush_out(ep, c);
                if (c->out_len + (size_t)n > kBuf) {
                    errors++;  // the server does not read: count it, drop the request
                } else {
                    memcpy(c->out + c->out_len, req, (size_t)n);
                    c->out_len += (size_t)n;
                    push_sched(c, next);
                    sent++;
                }
                size_t step = (size_t)((next - t0) / step_ns);
                if (step >= (size_t)nrates) step = (size_t)nrates - 1;
                next += (uint64_t)(-log(1.0 - rng_unit()) / rates[step] * 1e9);
            }
            for (int i = 0; i < nconns; i++)
                if (conns[i].out_len) flush_out(ep, &conns[i]);
            if (next >= end && now >= end) {
                sending = 0;
                drain_end = now + (uint64_t)(drain_s * 1e9);
            }
        }
        if (!sending) {
            uint64_t outstanding = 0;
            for (int i = 0; i < nconns; i++) outstanding += conns[i].count;
            if (outstanding == 0 || now >= drain_end) break;
        }
        uint64_t wake = sending ? (next < end ? next : end) : drain_end;
        struct timespec ts = {0, 0};
        if (wake > now) {
            ts.tv_sec = (time_t)((wake - now) / 1000000000u);
            ts.tv_nsec = (long)((wake - now) % 1000000000u);
        }
        int n = epoll_pwait2(ep, evs, 64, &ts, NULL);
        if (n < 0 && errno != EINTR) die(1, "epoll_pwait2: %s", strerror(errno));
        uint64_t t = now_ns();
        for (int i = 0; i < n; i++) {
            Conn* c = evs[i].data.ptr;
            if (evs[i].events & EPOLLOUT) flush_out(ep, c);
            if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                for (;;) {
                    ssize_t r = recv(c->fd, c->in + c->in_len, kBuf - c->in_len, MSG_DONTWAIT);
                    if (r < 0 && errno == EINTR) continue;
                    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
                    if (r <= 0) die(1, "the server closed a connection");
                    c->in_len += (size_t)r;
                    parse_answers(c, t);
                    if (c->in_len == kBuf) die(1, "answer larger than the buffer");
                }
            }
        }
    }
    uint64_t lost = sent - answered;
    if (log_file && fclose(log_file) != 0) die(1, "writing %s: %s", log_path, strerror(errno));
    qsort(lat, nlat, sizeof *lat, cmp_u64);
    printf(
        "arbloadgen: sent %llu answered %llu errors %llu lost %llu p50_us %.1f p99_us %.1f "
        "p999_us %.1f start_s %.6f\n",
        (unsigned long long)sent, (unsigned long long)answered, (unsigned long long)errors,
        (unsigned long long)lost, quantile_us(0.5), quantile_us(0.99), quantile_us(0.999),
        (double)t0 / 1e9);
    return 0;
}
