// Shared by the I/O interposers: how a user thread waits for a descriptor without stopping its core
// (layer B, the runtime's epoll) and how a call that may block in the kernel is bracketed so the
// core can be lent meanwhile (layer A).
#pragma once

#include <errno.h>
#include <sys/epoll.h>

#include <cstdint>

#include "arbrt/io.h"
#include "signals/interrupt.h"

namespace arbrun {

// Outcome of waiting for one descriptor.
enum class WaitOutcome {
    ready,        // the descriptor reported readiness: retry the call
    timedOut,     // the deadline (SO_RCVTIMEO/SO_SNDTIMEO, a poll timeout) passed
    interrupted,  // a signal or cancellation: errno EINTR unless the call restarts
    unsupported,  // epoll cannot watch it (regular file, bad fd): make the call blocking, layer A
};

// Waits on the runtime's epoll until `fd` reports `events` (EPOLLIN/EPOLLOUT/...) or the deadline.
WaitOutcome waitForFd(int fd, uint32_t events, uint64_t deadlineNs);

// True when the program made `fd` non-blocking itself: its calls then return EAGAIN natively, and
// so must ours.
bool isNonBlocking(int fd);

// The deadline a blocking socket call on `fd` would have (SO_RCVTIMEO or SO_SNDTIMEO from now), or
// arbrt::kWaitForever for none or for a descriptor that is not a socket.
uint64_t socketDeadline(int fd, bool sending);

// Runs `call` as a blocking call (layer A): the core may be lent while it is in the kernel. A
// signal for the thread cuts the call short (EINTR, interrupt.h): its handlers then run here, and
// the call is made again if every one had SA_RESTART and `honourRestart` (false for calls Linux
// never restarts), as the kernel would; otherwise it fails with EINTR. Cancellation acts.
template <typename F>
auto blockingCall(F&& call, bool honourRestart = true) {
    for (;;) {
        decltype(call()) r;
        {
            arbrt::BlockingCall bracket;
            InterruptibleBlockingCall mark;
            r = call();
        }
        if (r != -1 || errno != EINTR || !interruptPending()) return r;
        if (deliverInterrupts(honourRestart)) {
            errno = EINTR;
            return r;
        }
    }
}

}  // namespace arbrun
