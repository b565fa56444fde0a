#include "scratch_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace arbrun {
namespace {

// $TMPDIR as the user set it, as mktemp(1) does.
std::string scratchDirectory() {
    const char* dir = std::getenv("TMPDIR");
    return dir && *dir ? dir : "/tmp";
}

// pread until `size` bytes or EOF; what was read.
size_t readAt(int fd, char* buffer, size_t size, off_t offset) {
    size_t done = 0;
    while (done < size) {
        const ssize_t n = pread(fd, buffer + done, size - done, offset + off_t(done));
        if (n > 0) {
            done += size_t(n);
        } else if (n == 0 || errno != EINTR) {
            break;
        }
    }
    return done;
}

}  // namespace

// mkostemp then unlink: the name exists for the length of one system call.
int openScratchFile(std::string* error) {
    std::string pattern = scratchDirectory() + "/arbrun-XXXXXX";
    const int fd = mkostemp(pattern.data(), O_CLOEXEC);
    if (fd < 0) {
        *error = "cannot create a temporary file in " + scratchDirectory() + " (" +
                 std::strerror(errno) + "); set TMPDIR to a writable directory";
        return -1;
    }
    unlink(pattern.c_str());
    return fd;
}

// The child writes from offset 0 (it shares this description's offset), so rewind as well.
bool resetScratchFile(int fd, std::string* error) {
    if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0) {
        *error = std::string("cannot reset a temporary file (") + std::strerror(errno) + ")";
        return false;
    }
    return true;
}

// Small outputs (the doctor's trial) only; ab compares with sameContents().
std::string readScratchFile(int fd) {
    std::string out;
    char buffer[4096];
    for (off_t offset = 0;;) {
        const size_t n = readAt(fd, buffer, sizeof buffer, offset);
        out.append(buffer, n);
        if (n < sizeof buffer) return out;
        offset += off_t(n);
    }
}

// Sizes first (cheap), then block by block, so large outputs need no memory.
bool sameContents(int a, int b) {
    struct stat sa {
    }, sb{};
    if (fstat(a, &sa) != 0 || fstat(b, &sb) != 0) return false;
    if (sa.st_size != sb.st_size) return false;
    std::vector<char> bufferA(65536), bufferB(65536);
    for (off_t offset = 0; offset < sa.st_size;) {
        const size_t n = readAt(a, bufferA.data(), bufferA.size(), offset);
        if (n == 0 || readAt(b, bufferB.data(), n, offset) != n) return false;
        if (std::memcmp(bufferA.data(), bufferB.data(), n) != 0) return false;
        offset += off_t(n);
    }
    return true;
}

}  // namespace arbrun
