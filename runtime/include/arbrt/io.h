// Blocking in the kernel without stopping a core: bracketing calls that may block (layer A) and
// waiting for file-descriptor readiness through the runtime's own epoll (layer B).
#pragma once

#include <cstdint>

namespace arbrt {

// Layer A. Call enterBlockingCall() right before a system call that may block and
// exitBlockingCall(token) right after it. If the call lasts longer than lendAfterNs while other
// threads wait to run on the caller's core, the monitor lends the core to a spare carrier; on
// return the caller then queues itself to run again (possibly on another core). Costs one TSC read
// and one compare-and-swap when the core was not lent. Returns/accepts 0 on kernel threads that are
// not user threads, and inside another bracket (the outer one covers the call): nothing to do.
// Code inside a bracket may wait at user level (a lock, a futex): the bracket is closed for the
// switch and opened again where the thread resumes.
uint64_t enterBlockingCall();
void exitBlockingCall(uint64_t token);

// RAII form of the bracket.
class BlockingCall {
  public:
    BlockingCall() : token_(enterBlockingCall()) {}
    ~BlockingCall() { exitBlockingCall(token_); }
    BlockingCall(const BlockingCall&) = delete;
    BlockingCall& operator=(const BlockingCall&) = delete;

  private:
    uint64_t token_;
};

// Layer B. One file descriptor and the epoll events (EPOLLIN, EPOLLOUT, EPOLLPRI, EPOLLRDHUP) to
// wait for; `ready` receives what was reported (EPOLLERR and EPOLLHUP always count).
struct FdInterest {
    int fd;
    uint32_t events;
    uint32_t ready;
};

constexpr uint64_t kWaitForever = ~uint64_t{0};

// Parks the calling user thread until one of `count` descriptors is ready, `deadlineNs` (nowNs()
// timeline; kWaitForever: none) passes, or `interrupted` (may be null) returns true after a wake-up
// by arbrt::signal(). Returns the number of descriptors with `ready` set (> 0), 0 at the deadline,
// -EINTR when interrupted, or -errno when a descriptor cannot be waited for through epoll (EPERM:
// a regular file or directory, always ready; EBADF). Must be called on a user thread (else
// -EPERM). Descriptors are registered with EPOLLONESHOT and never made non-blocking.
int waitForFds(FdInterest* fds, int count, uint64_t deadlineNs, bool (*interrupted)());

}  // namespace arbrt
