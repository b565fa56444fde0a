// read/write/recv/send/accept on user threads: when the call would block, the thread waits on the
// runtime's epoll (layer B) instead of blocking its carrier; descriptors epoll cannot watch, and
// calls that can still block after readiness (another reader won the race, a large pipe write),
// run bracketed as blocking calls (layer A). Descriptors are never made non-blocking: the flag is
// shared with dup'ed descriptors and child processes. A descriptor the program made non-blocking
// gets EAGAIN exactly as natively.
//
// What each descriptor number is (FdKind, a per-fd hint) picks the call's path:
// - read/readv on a socket are made as recv/recvmsg with MSG_DONTWAIT first (the kernel runs the
//   same sock_recvmsg for both, with the same flags for a zero-flag recv), so a socket with data
//   costs one system call, not a poll(0) look and the read. A number of unknown kind is tried as a
//   socket; ENOTSOCK sends it to fstat once, which tells a file from the rest.
// - write/writev on a socket are made first as pwritev2 with RWF_NOWAIT. The kernel runs the same
//   sock_write_iter as for write, with the same message flags (a SOCK_SEQPACKET write still ends
//   its record), only without blocking: one system call while the socket has buffer space (a
//   thread-per-connection server answering a request made two). What does not fit takes the
//   look-then-call path for the rest. A number of unknown kind is sent to fstat once.
// - A regular file or block device is always ready for poll, so its calls are made at once
//   (bracketed), without the look: a program reading or writing files in 4 KiB pieces made two
//   system calls per piece.
// - Anything else (pipes, terminals, eventfds) takes the look-then-call path.
// A hint is forgotten when the program closes or dup2s over the number, or accept returns it, so
// a number that names another open file is normally learnt again. A stale hint (the number closed
// inside libc, by fclose, and reused) picks a path that is still correct: a "file" call is a
// blocking call, which any descriptor can take; an "other" one looks first; a "socket" write on
// a pipe is the same non-blocking write a pipe supports, and a regular file mostly refuses
// RWF_NOWAIT (EOPNOTSUPP) before writing anything, which drops the hint (where its file system
// takes it, a write it stops part-way is finished by a second call).
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <vector>

#include "arbrt/embed/resume_point.h"
#include "io/io_wait.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "signals/interrupt.h"
#include "signals/signalfd.h"

namespace arbrun {
namespace {

// What is known of each descriptor number (see the top): its kind, learnt from the first call
// that had to find out and forgotten by close/dup2/dup3 and accept, which may give the number to
// another open file. One byte per number, any thread, relaxed: every hint is an optimisation, and
// a stale one only picks a slower path that is still correct for every kind (a "file" read is a
// blocking call, the layer A that any descriptor can take). Numbers at or above kHintFds have no
// hint: they are tried as sockets first, and looked at before other calls.
enum class FdKind : uint8_t {
    unknown = 0,
    socket,  // a recv on it succeeded, accept returned it, or fstat said so
    file,    // a regular file or block device: always ready, so a look before a call is wasted
    other,   // anything else that is not a socket (pipe, terminal, eventfd, character device)
};
constexpr int kHintFds = 1 << 16;
std::atomic<uint8_t> gKind[kHintFds];

FdKind kindOf(int fd) {
    return fd >= 0 && fd < kHintFds ? FdKind(gKind[fd].load(std::memory_order_relaxed))
                                    : FdKind::unknown;
}

// Reads first: a server's every read on its connections would otherwise write the shared line.
void setKind(int fd, FdKind kind) {
    if (fd >= 0 && fd < kHintFds && kindOf(fd) != kind) {
        gKind[fd].store(uint8_t(kind), std::memory_order_relaxed);
    }
}

// Forgets what was known of a number that now names (or will name) another open file.
void forgetKind(int fd) {
    setKind(fd, FdKind::unknown);
}

// Finds out (fstat) and remembers the kind of `fd`; unknown when fstat fails (a bad number: the
// real call then reports it as natively). eventfd, timerfd, epoll and other anonymous inodes
// report no file type (mode 0600), so they are "other" and keep waiting through the epoll; a
// kernel that called them regular files would only send their reads to layer A.
FdKind learnKind(int fd) {
    struct stat st;
    if (fd < 0 || fd >= kHintFds || ARBRUN_REAL(fstat)(fd, &st) != 0) return FdKind::unknown;
    const FdKind kind = S_ISSOCK(st.st_mode)                         ? FdKind::socket
                        : S_ISREG(st.st_mode) || S_ISBLK(st.st_mode) ? FdKind::file
                                                                     : FdKind::other;
    setKind(fd, kind);
    return kind;
}

// The kind of `fd`, found out (learnKind) if not known yet.
FdKind kindOrLearn(int fd) {
    const FdKind kind = kindOf(fd);
    return kind == FdKind::unknown ? learnKind(fd) : kind;
}

// One non-blocking look at the descriptor: true when it is ready for `events` (or in error, or
// invalid: then the real call reports that).
bool readyNow(int fd, short events) {
    pollfd p{fd, events, 0};
    return ARBRUN_REAL(poll)(&p, 1, 0) != 0;
}

// What a call that would block does after waiting for its descriptor.
enum class AfterWait { retry, fail, block };

// Maps a wait's outcome to the next step; on `fail` errno is set as natively: EAGAIN for an expired
// SO_RCVTIMEO/SO_SNDTIMEO, EINTR when a handler without SA_RESTART ran (or cancellation acted).
AfterWait afterWait(WaitOutcome outcome) {
    switch (outcome) {
        case WaitOutcome::ready:
            return AfterWait::retry;
        case WaitOutcome::timedOut:
            errno = EAGAIN;
            return AfterWait::fail;
        case WaitOutcome::interrupted:
            if (!deliverInterrupts()) return AfterWait::retry;
            errno = EINTR;
            return AfterWait::fail;
        case WaitOutcome::unsupported:
            break;
    }
    return AfterWait::block;
}

// The common shape of read-like and write-like calls on descriptors of unknown kind: look, wait
// for readiness if the call would block, then make the call (bracketed: it may still block).
// A regular file or block device is always ready: the call is made at once (bracketed, as the
// look would have led to).
template <typename Call>
ssize_t whenReady(int fd, bool writing, Call&& call) {
    if (kindOrLearn(fd) == FdKind::file) return blockingCall(call);
    const short pollEvents = writing ? POLLOUT : POLLIN;
    const uint32_t epollEvents = writing ? EPOLLOUT : EPOLLIN;
    uint64_t deadline = 0;  // computed on the first wait only
    for (;;) {
        if (readyNow(fd, pollEvents) || isNonBlocking(fd)) return blockingCall(call);
        if (deadline == 0) deadline = socketDeadline(fd, writing);
        switch (afterWait(waitForFd(fd, epollEvents, deadline))) {
            case AfterWait::retry:
                continue;
            case AfterWait::fail:
                return -1;
            case AfterWait::block:
                return blockingCall(call);
        }
    }
}

bool wouldBlock(ssize_t r) {
    return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

// Socket calls that take flags: try with MSG_DONTWAIT first (no extra system call when data or
// buffer space is there), wait for readiness only if that would block and the caller wanted to
// block.
// `deadline` (0: not computed yet) is shared by the pieces of one call that loops (recvAll).
template <typename Call>
ssize_t socketCall(int fd, int flags, bool sending, Call&& call, uint64_t& deadline) {
    for (;;) {
        const ssize_t r = call(flags | MSG_DONTWAIT);
        if (!wouldBlock(r) || (flags & MSG_DONTWAIT) || isNonBlocking(fd)) return r;
        if (deadline == 0) deadline = socketDeadline(fd, sending);
        switch (afterWait(waitForFd(fd, sending ? EPOLLOUT : EPOLLIN, deadline))) {
            case AfterWait::retry:
                continue;
            case AfterWait::fail:
                return -1;
            case AfterWait::block:
                return blockingCall([&] { return call(flags); });
        }
    }
}

template <typename Call>
ssize_t socketCall(int fd, int flags, bool sending, Call&& call) {
    uint64_t deadline = 0;
    return socketCall(fd, flags, sending, call, deadline);
}

bool isStreamSocket(int fd) {
    int type = 0;
    socklen_t len = sizeof type;
    return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM;
}

// A blocking recv with MSG_WAITALL on a stream socket returns only once `len` bytes came (or EOF,
// an error, a signal or SO_RCVTIMEO after some data: then what came); the MSG_DONTWAIT try returns
// what is there, so continue with the rest. Not for MSG_PEEK (a second peek would start over) nor
// other socket types (MSG_WAITALL joins no datagrams); the type is asked only on a short piece.
template <typename Recv>
ssize_t recvAll(int fd, void* buf, size_t len, int flags, Recv&& recv) {
    char* p = static_cast<char*>(buf);
    uint64_t deadline = 0;
    size_t done = 0;
    for (;;) {
        const ssize_t r = socketCall(
            fd, flags, false, [&](int f) { return recv(p + done, len - done, f); }, deadline);
        if (r < 0) return done > 0 ? ssize_t(done) : r;
        done += size_t(r);
        if (done >= len || r == 0 || !(flags & MSG_WAITALL) ||
            (flags & (MSG_DONTWAIT | MSG_PEEK)) || isNonBlocking(fd) || !isStreamSocket(fd)) {
            return ssize_t(done);
        }
    }
}

// A blocking send on a stream socket returns only once everything is queued; with MSG_DONTWAIT
// the kernel may take part of it, so continue with the rest.
template <typename Send>
ssize_t sendAll(int fd, const void* buf, size_t len, int flags, Send&& send) {
    const char* p = static_cast<const char*>(buf);
    size_t done = 0;
    for (;;) {
        const ssize_t r =
            socketCall(fd, flags, true, [&](int f) { return send(p + done, len - done, f); });
        if (r < 0) return done > 0 ? ssize_t(done) : r;
        done += size_t(r);
        if (done >= len || r == 0 || (flags & MSG_DONTWAIT) || isNonBlocking(fd)) {
            return ssize_t(done);
        }
    }
}

// A read-like call on a descriptor that may be a socket: `asSocket` (the recv form, flags 0) when
// the hint allows, else, or when it says ENOTSOCK, `asAnyKind` through the look-then-call path.
// Only for requests of at least one byte: a zero-length read returns 0 on a socket without
// consuming a datagram, which a zero-length recv would not.
template <typename AsSocket, typename AsAnyKind>
ssize_t readMaybeSocket(int fd, bool nonEmpty, AsSocket&& asSocket, AsAnyKind&& asAnyKind) {
    const FdKind kind = kindOf(fd);
    if (nonEmpty && kind != FdKind::file && kind != FdKind::other) {
        const ssize_t r = socketCall(fd, 0, false, asSocket);
        if (r >= 0) setKind(fd, FdKind::socket);
        if (r >= 0 || errno != ENOTSOCK) return r;
        learnKind(fd);  // not a socket: which other kind, for this call's whenReady and later ones
    }
    return whenReady(fd, false, asAnyKind);
}

// The buffers of `iov` after the first `skip` bytes (fewer than their total), for the rest of a
// partial write.
std::vector<iovec> remainingAfter(const iovec* iov, int iovcnt, size_t skip) {
    std::vector<iovec> rest;
    for (int i = 0; i < iovcnt; ++i) {
        if (skip >= iov[i].iov_len) {
            skip -= iov[i].iov_len;
            continue;
        }
        rest.push_back({static_cast<char*>(iov[i].iov_base) + skip, iov[i].iov_len - skip});
        skip = 0;
    }
    return rest;
}

// A write-like call of `total` bytes (at least one) from `iov` (see the top): one non-blocking
// try when `fd` is known to be a socket, then `asAnyKind` (the look-then-call path) for what is
// left. As natively: a program's O_NONBLOCK socket gets the try's result (EAGAIN or a short
// count), a failure (EPIPE, with its SIGPIPE) is the call's, and a blocking socket takes
// everything unless a signal or SO_SNDTIMEO ends the rest early, when the part written is
// returned.
template <typename AsAnyKind>
ssize_t writeMaybeSocket(int fd, const iovec* iov, int iovcnt, size_t total,
                         AsAnyKind&& asAnyKind) {
    if (kindOrLearn(fd) != FdKind::socket) return asAnyKind(iov, iovcnt);
    const ssize_t r = ARBRUN_REAL(pwritev2)(fd, iov, iovcnt, -1, RWF_NOWAIT);
    if (r >= 0 && size_t(r) == total) return r;
    if (r < 0 && (errno == EOPNOTSUPP || errno == ENOSYS)) {  // a file that refuses RWF_NOWAIT
        forgetKind(fd);
        return asAnyKind(iov, iovcnt);
    }
    if ((r < 0 && errno != EAGAIN) || isNonBlocking(fd)) return r;
    if (r < 0) return asAnyKind(iov, iovcnt);  // nothing written: wait, then write it all
    const std::vector<iovec> rest = remainingAfter(iov, iovcnt, size_t(r));
    const ssize_t more = asAnyKind(rest.data(), int(rest.size()));
    return more < 0 ? r : r + more;
}

}  // namespace
}  // namespace arbrun

using namespace arbrun;

ARBRUN_EXPORT ssize_t read(int fd, void* buf, size_t count) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(read)(fd, buf, count);
    if (isEmulatedSignalfd(fd)) [[unlikely]]
        return readSignalfd(fd, buf, count);
    return readMaybeSocket(
        fd, count > 0, [&](int f) { return ARBRUN_REAL(recv)(fd, buf, count, f); },
        [&] { return ARBRUN_REAL(read)(fd, buf, count); });
}

ARBRUN_EXPORT ssize_t readv(int fd, const iovec* iov, int iovcnt) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(readv)(fd, iov, iovcnt);
    if (isEmulatedSignalfd(fd) && iovcnt >= 1 && iov) [[unlikely]]
        return readvSignalfd(fd, iov, iovcnt);
    // recvmsg refuses more than IOV_MAX buffers with EMSGSIZE where readv says EINVAL: such calls,
    // and empty ones, take the plain path.
    size_t total = 0;
    if (iov && iovcnt > 0 && iovcnt <= IOV_MAX) {
        for (int i = 0; i < iovcnt; ++i) total += iov[i].iov_len;
    }
    msghdr msg{};
    msg.msg_iov = const_cast<iovec*>(iov);
    msg.msg_iovlen = size_t(iovcnt);
    return readMaybeSocket(
        fd, total > 0, [&](int f) { return ARBRUN_REAL(recvmsg)(fd, &msg, f); },
        [&] { return ARBRUN_REAL(readv)(fd, iov, iovcnt); });
}

ARBRUN_EXPORT ssize_t write(int fd, const void* buf, size_t count) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(write)(fd, buf, count);
    const auto anyKind = [&](const iovec* iov, int iovcnt) {
        // The whole buffer as the program passed it, or the rest of it after a partial try.
        return iov->iov_base == buf && iovcnt == 1
                   ? whenReady(fd, true, [&] { return ARBRUN_REAL(write)(fd, buf, count); })
                   : whenReady(fd, true, [&] { return ARBRUN_REAL(writev)(fd, iov, iovcnt); });
    };
    const iovec whole{const_cast<void*>(buf), count};
    if (count == 0 || count > size_t(SSIZE_MAX)) return anyKind(&whole, 1);
    return writeMaybeSocket(fd, &whole, 1, count, anyKind);
}

ARBRUN_EXPORT ssize_t writev(int fd, const iovec* iov, int iovcnt) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(writev)(fd, iov, iovcnt);
    const auto anyKind = [&](const iovec* v, int n) {
        return whenReady(fd, true, [&] { return ARBRUN_REAL(writev)(fd, v, n); });
    };
    // Calls the kernel refuses (no buffers, too many, a total past SSIZE_MAX) and empty ones take
    // the plain path, which reports what natively would.
    size_t total = 0;
    bool plain = !iov || iovcnt <= 0 || iovcnt > IOV_MAX;
    for (int i = 0; !plain && i < iovcnt; ++i) {
        if (iov[i].iov_len > size_t(SSIZE_MAX) - total) plain = true;
        total += iov[i].iov_len;
    }
    if (plain || total == 0) return anyKind(iov, iovcnt);
    return writeMaybeSocket(fd, iov, iovcnt, total, anyKind);
}

ARBRUN_EXPORT ssize_t recv(int fd, void* buf, size_t len, int flags) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(recv)(fd, buf, len, flags);
    return recvAll(fd, buf, len, flags,
                   [&](void* p, size_t n, int f) { return ARBRUN_REAL(recv)(fd, p, n, f); });
}

ARBRUN_EXPORT ssize_t recvfrom(int fd, void* buf, size_t len, int flags, sockaddr* from,
                               socklen_t* fromLen) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(recvfrom)(fd, buf, len, flags, from, fromLen);
    return recvAll(fd, buf, len, flags, [&](void* p, size_t n, int f) {
        return ARBRUN_REAL(recvfrom)(fd, p, n, f, from, fromLen);
    });
}

ARBRUN_EXPORT ssize_t recvmsg(int fd, msghdr* msg, int flags) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(recvmsg)(fd, msg, flags);
    return socketCall(fd, flags, false, [&](int f) { return ARBRUN_REAL(recvmsg)(fd, msg, f); });
}

ARBRUN_EXPORT ssize_t send(int fd, const void* buf, size_t len, int flags) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(send)(fd, buf, len, flags);
    return sendAll(fd, buf, len, flags,
                   [&](const void* p, size_t n, int f) { return ARBRUN_REAL(send)(fd, p, n, f); });
}

ARBRUN_EXPORT ssize_t sendto(int fd, const void* buf, size_t len, int flags, const sockaddr* to,
                             socklen_t toLen) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(sendto)(fd, buf, len, flags, to, toLen);
    return sendAll(fd, buf, len, flags, [&](const void* p, size_t n, int f) {
        return ARBRUN_REAL(sendto)(fd, p, n, f, to, toLen);
    });
}

// A partial sendmsg is returned as is (rebuilding the caller's iovec array is not worth it: callers
// of sendmsg on stream sockets handle short writes).
ARBRUN_EXPORT ssize_t sendmsg(int fd, const msghdr* msg, int flags) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(sendmsg)(fd, msg, flags);
    return socketCall(fd, flags, true, [&](int f) { return ARBRUN_REAL(sendmsg)(fd, msg, f); });
}

ARBRUN_EXPORT int accept(int fd, sockaddr* addr, socklen_t* len) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(accept)(fd, addr, len);
    const int r =
        int(whenReady(fd, false, [&] { return ssize_t(ARBRUN_REAL(accept)(fd, addr, len)); }));
    setKind(r, FdKind::socket);
    return r;
}

ARBRUN_EXPORT int accept4(int fd, sockaddr* addr, socklen_t* len, int flags) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(accept4)(fd, addr, len, flags);
    const int r = int(
        whenReady(fd, false, [&] { return ssize_t(ARBRUN_REAL(accept4)(fd, addr, len, flags)); }));
    setKind(r, FdKind::socket);
    return r;
}

// close/dup2/dup3 only forget what is known of the number (its kind hint: a socket may reuse it
// next; a signalfd registration, signalfd.h); the calls themselves are the real ones. Both are
// dropped before the call: a number is never reused before its close has begun. A dup2/dup3 copy
// of a signalfd is registered as one.
ARBRUN_EXPORT int close(int fd) {
    forgetKind(fd);
    forgetSignalfd(fd);
    return ARBRUN_REAL(close)(fd);
}

ARBRUN_EXPORT int dup2(int oldFd, int newFd) {
    forgetKind(newFd);
    if (newFd != oldFd) forgetSignalfd(newFd);
    const int r = ARBRUN_REAL(dup2)(oldFd, newFd);
    if (r >= 0) copySignalfd(oldFd, r);
    return r;
}

ARBRUN_EXPORT int dup3(int oldFd, int newFd, int flags) {
    forgetKind(newFd);
    if (newFd != oldFd) forgetSignalfd(newFd);
    const int r = ARBRUN_REAL(dup3)(oldFd, newFd, flags);
    if (r >= 0) copySignalfd(oldFd, r);
    return r;
}
