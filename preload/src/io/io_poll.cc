// poll/ppoll/select/pselect/epoll_wait/epoll_pwait on user threads: one look with a zero timeout;
// if nothing is ready, the thread waits for any of the descriptors on the runtime's epoll (layer B)
// and looks again. The result always comes from the real call with a zero timeout, so every
// descriptor kind and flag is reported exactly as natively. Signal masks of ppoll/pselect/
// epoll_pwait apply to that look; while parked the thread's own mask applies.
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>

#include <cerrno>
#include <climits>
#include <vector>

#include "arbrt/embed/resume_point.h"
#include "arbrt/time.h"
#include "io/io_wait.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "signals/interrupt.h"
#include "signals/signals.h"

namespace arbrun {
namespace {

constexpr uint64_t kNsPerMs = 1'000'000;

uint64_t deadlineAfterMs(int timeoutMs) {
    return timeoutMs < 0 ? arbrt::kWaitForever : arbrt::nowNs() + uint64_t(timeoutMs) * kNsPerMs;
}

uint64_t deadlineAfter(const timespec* t) {
    if (!t) return arbrt::kWaitForever;
    return arbrt::nowNs() + uint64_t(t->tv_sec) * 1'000'000'000 + uint64_t(t->tv_nsec);
}

uint32_t epollEventsFor(short pollEvents) {
    uint32_t e = 0;
    if (pollEvents & (POLLIN | POLLRDNORM | POLLRDBAND)) e |= EPOLLIN;
    if (pollEvents & (POLLOUT | POLLWRNORM | POLLWRBAND)) e |= EPOLLOUT;
    if (pollEvents & POLLPRI) e |= EPOLLPRI;
    if (pollEvents & POLLRDHUP) e |= EPOLLRDHUP;
    return e;
}

// Outcome of one wait for any of `interests`: <0 -errno (EINTR: interrupted, after delivering;
// other: epoll cannot watch one of them), 0 deadline passed, >0 something may be ready.
int waitForAny(std::vector<arbrt::FdInterest>& interests, uint64_t deadline) {
    if (interests.empty()) {  // nothing to watch (all fds negative): a plain interruptible sleep
        if (deadline == arbrt::kWaitForever) {
            while (!interruptPending()) arbrt::block();
        } else {
            while (arbrt::nowNs() < deadline && !interruptPending()) arbrt::blockUntil(deadline);
        }
        return interruptPending() ? -EINTR : 0;
    }
    return arbrt::waitForFds(interests.data(), int(interests.size()), deadline, &interruptPending);
}

// A call interrupted by a signal of the program's: its handlers run, and it fails with EINTR
// (these calls never restart: SA_RESTART does not apply).
int failInterrupted() {
    deliverInterrupts();
    errno = EINTR;
    return -1;
}

// One look: the real call with a zero timeout (also what a zero-timeout call on a user thread
// is). A look can fail with EINTR without any signal of the program's: a zero-timeout select or
// pselect reports any signal pending on the carrier, such as the runtime's own SIGCANCEL that
// alerts this thread. Such a look counts as finding nothing and is made again; one with a signal
// of the program's to take ends the call with EINTR after its handlers ran, as natively.
template <typename Look>
int lookOnly(Look&& look) {
    for (;;) {
        const int r = look();
        if (r != -1 || errno != EINTR) return r;
        if (interruptPending()) return failInterrupted();
    }
}

// The loop every multiplexing call shares: look, wait, look again. `look` makes the real call
// with a zero timeout; `fallback` makes it blocking (layer A) with the time left in ms.
// `interestsOf` builds the descriptors to wait for; it runs only when a wait is needed, so a call
// that finds something ready at once allocates nothing.
template <typename Interests, typename Look, typename Fallback>
int lookWaitLook(Interests&& interestsOf, uint64_t deadline, Look&& look, Fallback&& fallback) {
    std::vector<arbrt::FdInterest> interests;
    bool built = false;
    for (;;) {
        const int r = lookOnly(look);
        if (r != 0) return r;
        if (!built) {
            interests = interestsOf();
            built = true;
        }
        const int w = waitForAny(interests, deadline);
        if (w == -EINTR) return failInterrupted();
        if (w < 0) {
            const uint64_t now = arbrt::nowNs();
            int leftMs = -1;
            if (deadline != arbrt::kWaitForever) {
                leftMs = now >= deadline ? 0 : int((deadline - now + kNsPerMs - 1) / kNsPerMs);
            }
            return blockingCall([&] { return fallback(leftMs); }, false);  // never restarted
        }
        if (w == 0) return lookOnly(look);  // deadline: one last look, as the kernel does
    }
}

std::vector<arbrt::FdInterest> interestsOf(const pollfd* fds, nfds_t n) {
    std::vector<arbrt::FdInterest> v;
    v.reserve(n);
    for (nfds_t i = 0; i < n; ++i) {
        if (fds[i].fd >= 0) v.push_back({fds[i].fd, epollEventsFor(fds[i].events), 0});
    }
    return v;
}

std::vector<arbrt::FdInterest> interestsOf(int nfds, const fd_set* in, const fd_set* out,
                                           const fd_set* ex) {
    std::vector<arbrt::FdInterest> v;
    for (int fd = 0; fd < nfds && fd < FD_SETSIZE; ++fd) {
        uint32_t e = 0;
        if (in && FD_ISSET(fd, in)) e |= EPOLLIN;
        if (out && FD_ISSET(fd, out)) e |= EPOLLOUT;
        if (ex && FD_ISSET(fd, ex)) e |= EPOLLPRI;
        if (e) v.push_back({fd, e, 0});
    }
    return v;
}

// select with the caller's sets kept intact until the final look writes them.
struct SelectSets {
    fd_set in, out, ex;
    fd_set *pin, *pout, *pex;
    SelectSets(fd_set* i, fd_set* o, fd_set* e) : pin(i), pout(o), pex(e) {
        if (i) in = *i;
        if (o) out = *o;
        if (e) ex = *e;
    }
    // Restores the original sets (a look that found nothing clears them).
    void restore() const {
        if (pin) *pin = in;
        if (pout) *pout = out;
        if (pex) *pex = ex;
    }
};

void storeRemaining(timeval* tv, uint64_t deadline) {
    if (!tv || deadline == arbrt::kWaitForever) return;
    const uint64_t now = arbrt::nowNs();
    const uint64_t left = now >= deadline ? 0 : deadline - now;
    tv->tv_sec = time_t(left / 1'000'000'000);
    tv->tv_usec = suseconds_t(left % 1'000'000'000 / 1'000);
}

uint64_t deadlineAfter(const timeval* tv) {
    if (!tv) return arbrt::kWaitForever;
    return arbrt::nowNs() + uint64_t(tv->tv_sec) * 1'000'000'000 + uint64_t(tv->tv_usec) * 1'000;
}

timespec msToTimespec(int ms) {
    return timespec{time_t(ms / 1000), long(ms % 1000) * 1'000'000};
}

}  // namespace
}  // namespace arbrun

using namespace arbrun;

ARBRUN_EXPORT int poll(pollfd* fds, nfds_t n, int timeout) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(poll)(fds, n, timeout);
    if (timeout == 0) return lookOnly([&] { return ARBRUN_REAL(poll)(fds, n, 0); });
    return lookWaitLook([&] { return interestsOf(fds, n); }, deadlineAfterMs(timeout),
                        [&] { return ARBRUN_REAL(poll)(fds, n, 0); },
                        [&](int leftMs) { return ARBRUN_REAL(poll)(fds, n, leftMs); });
}

// The p-forms (ppoll, pselect, epoll_pwait, epoll_pwait2) take their mask as the user thread's
// virtual one for the call (TemporarySignalMask); the real calls they make get none, since the
// carrier's real mask is not the program's.
ARBRUN_EXPORT int ppoll(pollfd* fds, nfds_t n, const timespec* timeout, const sigset_t* mask) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(ppoll)(fds, n, timeout, mask);
    // A zero time-out only looks: the kernel restores the mask before a signal could be taken.
    if (timeout && timeout->tv_sec == 0 && timeout->tv_nsec == 0)
        return lookOnly([&] { return ARBRUN_REAL(ppoll)(fds, n, timeout, nullptr); });
    const TemporarySignalMask during(mask);
    const timespec none{0, 0};
    return lookWaitLook([&] { return interestsOf(fds, n); }, deadlineAfter(timeout),
                        [&] { return ARBRUN_REAL(ppoll)(fds, n, &none, nullptr); },
                        [&](int leftMs) {
                            const timespec left = msToTimespec(leftMs);
                            return ARBRUN_REAL(ppoll)(fds, n, leftMs < 0 ? nullptr : &left,
                                                      nullptr);
                        });
}

ARBRUN_EXPORT int select(int nfds, fd_set* in, fd_set* out, fd_set* ex, timeval* timeout) {
    ARBRT_RESUME_POINT();
    const bool zero = timeout && timeout->tv_sec == 0 && timeout->tv_usec == 0;
    if (!onUserThread() || nfds < 0) return ARBRUN_REAL(select)(nfds, in, out, ex, timeout);
    if (zero) return lookOnly([&] { return ARBRUN_REAL(select)(nfds, in, out, ex, timeout); });
    const SelectSets sets(in, out, ex);
    const uint64_t deadline = deadlineAfter(timeout);
    const int r = lookWaitLook(
        [&] {
            return interestsOf(nfds, in ? &sets.in : nullptr, out ? &sets.out : nullptr,
                               ex ? &sets.ex : nullptr);
        },
        deadline,
        [&] {
            sets.restore();
            timeval none{0, 0};
            return ARBRUN_REAL(select)(nfds, in, out, ex, &none);
        },
        [&](int leftMs) {
            sets.restore();
            timeval left{leftMs / 1000, suseconds_t(leftMs % 1000) * 1000};
            return ARBRUN_REAL(select)(nfds, in, out, ex, leftMs < 0 ? nullptr : &left);
        });
    storeRemaining(timeout, deadline);  // Linux reports the time not slept
    return r;
}

ARBRUN_EXPORT int pselect(int nfds, fd_set* in, fd_set* out, fd_set* ex, const timespec* timeout,
                          const sigset_t* mask) {
    ARBRT_RESUME_POINT();
    if (!onUserThread() || nfds < 0) return ARBRUN_REAL(pselect)(nfds, in, out, ex, timeout, mask);
    if (timeout && timeout->tv_sec == 0 && timeout->tv_nsec == 0)
        return lookOnly([&] { return ARBRUN_REAL(pselect)(nfds, in, out, ex, timeout, nullptr); });
    const TemporarySignalMask during(mask);
    const SelectSets sets(in, out, ex);
    return lookWaitLook(
        [&] {
            return interestsOf(nfds, in ? &sets.in : nullptr, out ? &sets.out : nullptr,
                               ex ? &sets.ex : nullptr);
        },
        deadlineAfter(timeout),
        [&] {
            sets.restore();
            const timespec none{0, 0};
            return ARBRUN_REAL(pselect)(nfds, in, out, ex, &none, nullptr);
        },
        [&](int leftMs) {
            sets.restore();
            const timespec left = msToTimespec(leftMs);
            return ARBRUN_REAL(pselect)(nfds, in, out, ex, leftMs < 0 ? nullptr : &left, nullptr);
        });
}

ARBRUN_EXPORT int epoll_wait(int epfd, epoll_event* events, int max, int timeout) {
    ARBRT_RESUME_POINT();
    if (timeout == 0 || !onUserThread()) return ARBRUN_REAL(epoll_wait)(epfd, events, max, timeout);
    return lookWaitLook(
        [&] {
            return std::vector<arbrt::FdInterest>{{epfd, EPOLLIN, 0}};
        },  // epoll fds poll
        deadlineAfterMs(timeout), [&] { return ARBRUN_REAL(epoll_wait)(epfd, events, max, 0); },
        [&](int leftMs) { return ARBRUN_REAL(epoll_wait)(epfd, events, max, leftMs); });
}

ARBRUN_EXPORT int epoll_pwait(int epfd, epoll_event* events, int max, int timeout,
                              const sigset_t* mask) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(epoll_pwait)(epfd, events, max, timeout, mask);
    if (timeout == 0) return ARBRUN_REAL(epoll_wait)(epfd, events, max, 0);
    const TemporarySignalMask during(mask);
    return lookWaitLook(
        [&] {
            return std::vector<arbrt::FdInterest>{{epfd, EPOLLIN, 0}};
        },
        deadlineAfterMs(timeout), [&] { return ARBRUN_REAL(epoll_wait)(epfd, events, max, 0); },
        [&](int leftMs) { return ARBRUN_REAL(epoll_wait)(epfd, events, max, leftMs); });
}

// glibc 2.35 and later; a timespec time-out (null: none).
ARBRUN_EXPORT int epoll_pwait2(int epfd, epoll_event* events, int max, const timespec* timeout,
                               const sigset_t* mask) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(epoll_pwait2)(epfd, events, max, timeout, mask);
    if (timeout &&
        (timeout->tv_sec < 0 || timeout->tv_nsec < 0 || timeout->tv_nsec >= 1'000'000'000)) {
        errno = EINVAL;
        return -1;
    }
    if (timeout && timeout->tv_sec == 0 && timeout->tv_nsec == 0)
        return ARBRUN_REAL(epoll_wait)(epfd, events, max, 0);
    const TemporarySignalMask during(mask);
    return lookWaitLook(
        [&] {
            return std::vector<arbrt::FdInterest>{{epfd, EPOLLIN, 0}};
        },
        deadlineAfter(timeout), [&] { return ARBRUN_REAL(epoll_wait)(epfd, events, max, 0); },
        [&](int leftMs) { return ARBRUN_REAL(epoll_wait)(epfd, events, max, leftMs); });
}
