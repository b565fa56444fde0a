// fd_kinds: read() and write() on descriptors of every kind, and on numbers that change kind —
// a regular file written and read back in 4 KiB pieces (arbrun makes a file's calls at once,
// without a look), zero-length reads and reads at end of file, a character device; then numbers
// closed inside libc (fclose of an fdopen'ed stream, so arbrun may still hold the old kind) and
// reused: a file's number by a pipe whose reader must wait for a writer thread (200 rounds of
// token and acknowledgement, each write racing the read), a pipe's number by a regular file, a
// socket's number by a regular file.
#include <fcntl.h>
#include <sys/socket.h>

#include "../common/compat.h"

enum { PIECE = 4096, PIECES = 256, ROUNDS = 200 };

static unsigned char piece[PIECE];

// A number of kind `kind` ("file", "pipe" or "socket"), used once so that arbrun knows its kind,
// then closed inside libc. Returns the freed number.
static int used_then_closed_inside_libc(const char* kind) {
    int fd, other = -1;
    char c = 'x';
    if (strcmp(kind, "file") == 0) {
        fd = compat_temp_file("fd_kinds");
        CHECK_EQ(write(fd, &c, 1), 1);
        CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
        CHECK_EQ(read(fd, &c, 1), 1);
    } else {
        int p[2];
        if (strcmp(kind, "pipe") == 0) {
            CHECK_SYS(pipe(p));
        } else {
            CHECK_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, p));
        }
        fd = p[0];
        other = p[1];
        CHECK_EQ(write(other, &c, 1), 1);
        CHECK_EQ(read(fd, &c, 1), 1);
    }
    FILE* stream = fdopen(fd, "r");
    CHECK(stream != NULL, "fdopen");
    CHECK_EQ(fclose(stream), 0);
    if (other >= 0) close(other);
    return fd;
}

static int ack[2];  // the reader's acknowledgement of each token

// Writes token i only after the reader acknowledged token i - 1, so the reader's every read
// finds the pipe empty unless this thread got there first.
static void* pipe_writer(void* arg) {
    const int fd = *(int*)arg;
    for (int i = 0; i < ROUNDS; i++) {
        for (volatile int spin = i % 37 * 50; spin > 0; spin--) {
        }
        const char c = (char)i;
        CHECK_EQ(write(fd, &c, 1), 1);
        char a;
        CHECK(read(ack[0], &a, 1) == 1 && a == c, "ack %d", i);
    }
    return NULL;
}

int main(void) {
    compat_start("fd_kinds");
    for (int i = 0; i < PIECE; i++) piece[i] = (unsigned char)(i * 7);

    // A regular file, in pieces.
    const int f = compat_temp_file("fd_kinds");
    for (int i = 0; i < PIECES; i++) {
        piece[0] = (unsigned char)i;
        CHECK_EQ(write(f, piece, PIECE), PIECE);
    }
    CHECK_EQ(lseek(f, 0, SEEK_SET), 0);
    unsigned char buf[PIECE];
    for (int i = 0; i < PIECES; i++) {
        CHECK_EQ(read(f, buf, PIECE), PIECE);
        CHECK(buf[0] == (unsigned char)i && buf[1] == 7 && buf[PIECE - 1] == piece[PIECE - 1],
              "piece %d differs", i);
    }
    CHECK_EQ(read(f, buf, PIECE), 0);  // end of file
    CHECK_EQ(read(f, buf, 0), 0);
    CHECK_SYS(fcntl(f, F_SETFL, O_NONBLOCK));
    CHECK_EQ(lseek(f, -10, SEEK_END), PIECE * PIECES - 10);
    CHECK_EQ(read(f, buf, PIECE), 10);
    close(f);

    // A character device.
    const int z = open("/dev/zero", O_RDONLY);
    CHECK_SYS(z);
    buf[0] = 1;
    CHECK_EQ(read(z, buf, PIECE), PIECE);
    CHECK_EQ(buf[0], 0);
    close(z);

    // A file's number reused by a pipe's read end, which must wait for its writer.
    const int num = used_then_closed_inside_libc("file");
    int p[2];
    CHECK_SYS(pipe(p));  // the read end gets the lowest free number: the file's
    CHECK(p[0] == num, "the pipe's read end got %d, not %d", p[0], num);
    const int rd = p[0];
    int wr = p[1];
    CHECK_SYS(pipe(ack));
    pthread_t t = compat_spawn(pipe_writer, &wr);
    for (int i = 0; i < ROUNDS; i++) {
        char c;
        CHECK(read(rd, &c, 1) == 1 && c == (char)i, "round %d", i);
        CHECK_EQ(write(ack[1], &c, 1), 1);
    }
    compat_join(t);
    close(ack[0]);
    close(ack[1]);
    close(rd);
    close(wr);

    // A pipe's number and a socket's number reused by regular files.
    const char* kinds[] = {"pipe", "socket"};
    for (int k = 0; k < 2; k++) {
        const int old = used_then_closed_inside_libc(kinds[k]);
        const int g = compat_temp_file("fd_kinds");
        CHECK(g == old, "%s: the file got %d, not %d", kinds[k], g, old);
        CHECK_EQ(write(g, piece, PIECE), PIECE);
        CHECK_EQ(lseek(g, 0, SEEK_SET), 0);
        CHECK_EQ(read(g, buf, PIECE), PIECE);
        CHECK_EQ(read(g, buf, PIECE), 0);
        close(g);
    }
    return compat_ok();
}
