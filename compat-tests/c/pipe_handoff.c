// pipe_handoff: two threads talk through pipes — 5,000 one-byte round trips (each side blocks in
// read until the other writes), then 16 MiB streamed through a pipe in odd-sized writes (the
// writer blocks when the pipe is full) with a checksum compared at the reader; EOF after close;
// write to a pipe whose reader closed gives EPIPE (SIGPIPE ignored).
#include "../common/compat.h"

static int ab[2], ba[2], bulk[2];
enum { TRIPS = 5000, BULK = 16 << 20 };

static void* echo(void* arg) {
    (void)arg;
    for (int i = 0; i < TRIPS; i++) {
        unsigned char c;
        CHECK(read(ab[0], &c, 1) == 1, "echo read");
        c++;
        CHECK(write(ba[1], &c, 1) == 1, "echo write");
    }
    return NULL;
}

static uint64_t checksum(uint64_t h, const unsigned char* p, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

static void* bulk_writer(void* arg) {
    uint64_t* sum = (uint64_t*)arg;
    static unsigned char buf[70001];
    uint64_t seed = 7, h = 1469598103934665603ULL;
    size_t sent = 0;
    while (sent < BULK) {
        size_t n = BULK - sent < sizeof buf ? BULK - sent : sizeof buf;
        n = n > 1 ? n - (sent % 7) : n;
        for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)compat_rand(&seed);
        h = checksum(h, buf, n);
        size_t off = 0;
        while (off < n) {
            ssize_t w = write(bulk[1], buf + off, n - off);
            CHECK(w > 0, "bulk write: errno %d", errno);
            off += (size_t)w;
        }
        sent += n;
    }
    *sum = h;
    close(bulk[1]);
    return NULL;
}

int main(void) {
    compat_start("pipe_handoff");
    signal(SIGPIPE, SIG_IGN);
    CHECK_SYS(pipe(ab));
    CHECK_SYS(pipe(ba));
    pthread_t t = compat_spawn(echo, NULL);
    unsigned char c = 0;
    for (int i = 0; i < TRIPS; i++) {
        unsigned char out = (unsigned char)i, in;
        CHECK(write(ab[1], &out, 1) == 1, "main write");
        CHECK(read(ba[0], &in, 1) == 1, "main read");
        CHECK(in == (unsigned char)(out + 1), "round trip %d: got %u", i, in);
        c = in;
    }
    (void)c;
    compat_join(t);

    CHECK_SYS(pipe(bulk));
    uint64_t sent_sum = 0;
    t = compat_spawn(bulk_writer, &sent_sum);
    static unsigned char buf[65536];
    uint64_t h = 1469598103934665603ULL;
    size_t total = 0;
    ssize_t r;
    while ((r = read(bulk[0], buf, sizeof buf)) > 0) {
        h = checksum(h, buf, (size_t)r);
        total += (size_t)r;
    }
    CHECK(r == 0, "read error %d", errno);
    compat_join(t);
    CHECK_EQ(total, BULK);
    CHECK(h == sent_sum, "checksum mismatch");
    close(bulk[0]);

    // EPIPE.
    int p[2];
    CHECK_SYS(pipe(p));
    close(p[0]);
    CHECK_ERRNO(write(p[1], "x", 1), EPIPE);
    close(p[1]);
    return compat_ok();
}
