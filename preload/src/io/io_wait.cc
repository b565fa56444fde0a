// Waiting for descriptors from interposed calls (see io_wait.h).
#include "io/io_wait.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>

#include "arbrt/time.h"
#include "signals/interrupt.h"

namespace arbrun {

WaitOutcome waitForFd(int fd, uint32_t events, uint64_t deadlineNs) {
    arbrt::FdInterest interest{fd, events, 0};
    const int r = arbrt::waitForFds(&interest, 1, deadlineNs, &interruptPending);
    if (r > 0) return WaitOutcome::ready;
    if (r == 0) return WaitOutcome::timedOut;
    if (r == -EINTR) return WaitOutcome::interrupted;
    return WaitOutcome::unsupported;
}

bool isNonBlocking(int fd) {
    const int flags = fcntl(fd, F_GETFL);
    return flags >= 0 && (flags & O_NONBLOCK);
}

uint64_t socketDeadline(int fd, bool sending) {
    timeval tv{};
    socklen_t len = sizeof tv;
    if (getsockopt(fd, SOL_SOCKET, sending ? SO_SNDTIMEO : SO_RCVTIMEO, &tv, &len) != 0 ||
        (tv.tv_sec == 0 && tv.tv_usec == 0)) {
        return arbrt::kWaitForever;
    }
    return arbrt::nowNs() + uint64_t(tv.tv_sec) * 1'000'000'000 + uint64_t(tv.tv_usec) * 1'000;
}

}  // namespace arbrun
