// Reads and writes a regular file in pieces, as a program using stdio or its own buffer does:
// writes SIZE bytes to a new file in PIECE-byte write() calls, then reads it back ROUNDS times in
// PIECE-byte read() calls. Prints the time per call in nanoseconds.
//
// Usage: file_pieces DIR SIZE PIECE ROUNDS   (the file is made in DIR and removed)
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char** argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: file_pieces DIR SIZE PIECE ROUNDS\n");
        return 2;
    }
    const long size = atol(argv[2]), piece = atol(argv[3]), rounds = atol(argv[4]);
    if (size < 1 || piece < 1 || piece > size || rounds < 1) {
        fprintf(stderr, "file_pieces: need 1 <= PIECE <= SIZE and ROUNDS >= 1\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/file_pieces.XXXXXX", argv[1]);
    const int fd = mkstemp(path);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    unlink(path);
    char* buf = malloc((size_t)piece);
    if (!buf) return 1;
    memset(buf, 'x', (size_t)piece);
    long writes = 0, reads = 0;
    const double t0 = now_ns();
    for (long done = 0; done < size; done += piece, ++writes) {
        if (write(fd, buf, (size_t)piece) != piece) {
            perror("write");
            return 1;
        }
    }
    const double t1 = now_ns();
    for (long r = 0; r < rounds; ++r) {
        if (lseek(fd, 0, SEEK_SET) != 0) return 1;
        ssize_t n;
        while ((n = read(fd, buf, (size_t)piece)) > 0) ++reads;
        if (n < 0) {
            perror("read");
            return 1;
        }
    }
    const double t2 = now_ns();
    printf("write_ns %.0f read_ns %.0f\n", (t1 - t0) / (double)writes, (t2 - t1) / (double)reads);
    free(buf);
    close(fd);
    return 0;
}
