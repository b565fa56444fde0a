// signalfd on virtual signals. The kernel's signalfd reports signals pending in the kernel for the
// reading thread or its process; under this library a signal the program blocks is taken by the
// wrapper and kept pending in the virtual sets (signals.h), where the kernel's signalfd never sees
// it: a program that blocks SIGTERM and reads it from a signalfd would wait forever. So on a user
// thread signalfd() makes an eventfd instead, registered here with its mask:
// - readiness: whoever makes a signal in its mask pending (a process-directed signal recorded by
//   the wrapper, a pthread_kill or pthread_sigqueue) adds 1 to the eventfd, so poll, select and
//   epoll, the program's or the runtime's, see it readable;
// - read (and readv, raw reads) of the number: takes pending signals in the mask that the calling
//   thread may take, as the sigwait family does, one struct signalfd_siginfo each; empties the
//   eventfd first and signals it again if some are left, so readiness follows what is pending
//   (a signal taken another way leaves it readable once: the next read finds nothing and empties
//   it). Blocks (as an interruptible wait) or fails with EAGAIN when nothing is pending, per the
//   descriptor's O_NONBLOCK;
// - signalfd(fd, mask, flags) on a registered number changes its mask; close, dup2 and dup3 over
//   the number forget it (dup2 and dup3 of a registered number register the copy);
// - a fork child gets eventfds of its own at the same numbers (renewSignalfdsAfterFork).
// Not emulated: a number copied with dup or fcntl(F_DUPFD) reads as the eventfd it is; the
// registration does not survive exec; descriptors numbered 65536 and up get the kernel's
// signalfd (a line on stderr says so).
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace arbrun {

// signalfd(fd, mask, flags) on a user thread, with the kernel's checks and errors: the descriptor,
// or -errno. `maskSize` is the raw call's sizemask (8; libc's wrapper passes that).
int signalfdCall(int fd, const sigset_t* mask, size_t maskSize, int flags);

// Whether `fd` is a registered signalfd (one relaxed load).
bool isEmulatedSignalfd(int fd);

// read() of a registered signalfd on a user thread: as the kernel's (-1 with errno on failure).
ssize_t readSignalfd(int fd, void* buf, size_t count);

// readv() of a registered signalfd on a user thread: as read(), into the buffers in turn.
ssize_t readvSignalfd(int fd, const struct iovec* iov, int iovcnt);

// The number `fd` now names (or will name) another open file (close, dup2/dup3 over it): once this
// returns, nothing of ours writes to it.
void forgetSignalfd(int fd);
// dup2/dup3 made `to` a copy of `from`: a registered `from` registers `to` with its mask.
void copySignalfd(int from, int to);
// close_range(first, last): forgets every registered number in the range.
void forgetSignalfdRange(unsigned first, unsigned last);

// In a fork child, while its forking thread is its only one: each registered number gets an eventfd
// of its own (same number, same O_NONBLOCK and FD_CLOEXEC). The one it inherited is shared with the
// parent, whose signals would make it readable here, and whose reads would empty it of this
// process's signals; natively each process's signalfd reports its own.
void renewSignalfdsAfterFork();

// Signals watched by some registered signalfd; written when one is registered, read lock-free.
extern std::atomic<uint64_t> gSignalfdSignals;
// Signal `sig` became pending: signals the eventfds that watch it. Async-signal-safe.
void notifySignalfdsSlow(int sig);
inline void notifySignalfds(int sig) {
    if (gSignalfdSignals.load(std::memory_order_seq_cst) & (uint64_t{1} << (sig - 1)))
        notifySignalfdsSlow(sig);
}

}  // namespace arbrun
