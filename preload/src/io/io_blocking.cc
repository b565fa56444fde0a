// Calls that may block in the kernel and have no readiness to wait for (or whose readiness epoll
// cannot see): they run bracketed as blocking calls (layer A), so the runtime lends the core to a
// spare carrier if the call lasts while other threads wait to run. Costs two TSC-stamped stores
// when the call is quick. Kernel threads (and the native fallback) call libc directly.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/msg.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdarg>

#include "arbrt/embed/resume_point.h"
#include "io/io_wait.h"
#include "libc/real_libc.h"
#include "libc/shim.h"

using namespace arbrun;

// Pass-through bracketed when the caller is a user thread.
#define ARBRUN_BLOCKING(fn, ...)                                                 \
    (onUserThread() ? blockingCall([&] { return ARBRUN_REAL(fn)(__VA_ARGS__); }) \
                    : ARBRUN_REAL(fn)(__VA_ARGS__))

ARBRUN_EXPORT int connect(int fd, const sockaddr* addr, socklen_t len) {
    ARBRT_RESUME_POINT();
    return ARBRUN_BLOCKING(connect, fd, addr, len);
}

ARBRUN_EXPORT ssize_t pread(int fd, void* buf, size_t n, off_t off) {
    ARBRT_RESUME_POINT();
    return ARBRUN_BLOCKING(pread, fd, buf, n, off);
}

ARBRUN_EXPORT ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
    ARBRT_RESUME_POINT();
    return ARBRUN_BLOCKING(pwrite, fd, buf, n, off);
}

ARBRUN_EXPORT ssize_t preadv(int fd, const iovec* iov, int cnt, off_t off) {
    ARBRT_RESUME_POINT();
    return ARBRUN_BLOCKING(preadv, fd, iov, cnt, off);
}

ARBRUN_EXPORT ssize_t pwritev(int fd, const iovec* iov, int cnt, off_t off) {
    ARBRT_RESUME_POINT();
    return ARBRUN_BLOCKING(pwritev, fd, iov, cnt, off);
}

ARBRUN_EXPORT pid_t waitpid(pid_t pid, int* status, int options) {
    ARBRT_RESUME_POINT();
    if (options & WNOHANG) return ARBRUN_REAL(waitpid)(pid, status, options);
    return ARBRUN_BLOCKING(waitpid, pid, status, options);
}

ARBRUN_EXPORT pid_t wait(int* status) {
    ARBRT_RESUME_POINT();
    return ARBRUN_BLOCKING(wait, status);
}

ARBRUN_EXPORT pid_t wait4(pid_t pid, int* status, int options, rusage* usage) {
    ARBRT_RESUME_POINT();
    return ARBRUN_BLOCKING(wait4, pid, status, options, usage);
}

ARBRUN_EXPORT int waitid(idtype_t type, id_t id, siginfo_t* info, int options) {
    ARBRT_RESUME_POINT();
    return ARBRUN_BLOCKING(waitid, type, id, info, options);
}

ARBRUN_EXPORT int fsync(int fd) {
    ARBRT_RESUME_POINT();
    return ARBRUN_BLOCKING(fsync, fd);
}

ARBRUN_EXPORT int fdatasync(int fd) {
    ARBRT_RESUME_POINT();
    return ARBRUN_BLOCKING(fdatasync, fd);
}

ARBRUN_EXPORT ssize_t sendfile(int out, int in, off_t* off, size_t count) {
    ARBRT_RESUME_POINT();
    return ARBRUN_BLOCKING(sendfile, out, in, off, count);
}

ARBRUN_EXPORT ssize_t splice(int in, loff_t* inOff, int out, loff_t* outOff, size_t len,
                             unsigned flags) {
    ARBRT_RESUME_POINT();
    return ARBRUN_BLOCKING(splice, in, inOff, out, outOff, len, flags);
}

ARBRUN_EXPORT int flock(int fd, int op) {
    ARBRT_RESUME_POINT();
    return ARBRUN_BLOCKING(flock, fd, op);
}

// System V IPC waits are never restarted after a handler (signal(7)).
ARBRUN_EXPORT ssize_t msgrcv(int id, void* msg, size_t size, long type, int flags) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(msgrcv)(id, msg, size, type, flags);
    return blockingCall([&] { return ARBRUN_REAL(msgrcv)(id, msg, size, type, flags); }, false);
}

ARBRUN_EXPORT int msgsnd(int id, const void* msg, size_t size, int flags) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(msgsnd)(id, msg, size, flags);
    return blockingCall([&] { return ARBRUN_REAL(msgsnd)(id, msg, size, flags); }, false);
}

ARBRUN_EXPORT int recvmmsg(int fd, mmsghdr* v, unsigned n, int flags, timespec* timeout) {
    ARBRT_RESUME_POINT();
    return ARBRUN_BLOCKING(recvmmsg, fd, v, n, flags, timeout);
}

ARBRUN_EXPORT int sendmmsg(int fd, mmsghdr* v, unsigned n, int flags) {
    ARBRT_RESUME_POINT();
    return ARBRUN_BLOCKING(sendmmsg, fd, v, n, flags);
}

namespace {

// open's third argument exists only when the flags create a file; reading it otherwise would read
// whatever the caller left in the register.
mode_t modeArgument(int flags, va_list ap) {
    return (flags & (O_CREAT | __O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
}

}  // namespace

// Opening a FIFO blocks until the other end opens; everything else returns at once.
ARBRUN_EXPORT int open(const char* path, int flags, ...) {
    ARBRT_RESUME_POINT();
    va_list ap;
    va_start(ap, flags);
    const mode_t mode = modeArgument(flags, ap);
    va_end(ap);
    return ARBRUN_BLOCKING(open, path, flags, mode);
}

ARBRUN_EXPORT int open64(const char* path, int flags, ...) {
    ARBRT_RESUME_POINT();
    va_list ap;
    va_start(ap, flags);
    const mode_t mode = modeArgument(flags, ap);
    va_end(ap);
    return ARBRUN_BLOCKING(open64, path, flags, mode);
}

ARBRUN_EXPORT int openat(int dir, const char* path, int flags, ...) {
    ARBRT_RESUME_POINT();
    va_list ap;
    va_start(ap, flags);
    const mode_t mode = modeArgument(flags, ap);
    va_end(ap);
    return ARBRUN_BLOCKING(openat, dir, path, flags, mode);
}
