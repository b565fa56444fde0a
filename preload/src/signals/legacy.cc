// The BSD and System V signal interfaces glibc still exports: sigsetmask, sigblock, siggetmask,
// sighold, sigrelse, sigignore, sigset, sigpause (BSD and XPG forms), siginterrupt and
// sysv_signal. glibc builds them on its internal __sigprocmask, __sigaction and __sigsuspend, which
// no interposition reaches: on a user thread they would change the carrier's real mask and
// dispositions behind the virtual ones (dash's sigclearmask is sigsetmask(0): its virtual mask
// stayed all-blocked and its children inherited that). Here they are made of the interposed POSIX
// calls, with glibc's semantics: a BSD mask is an int holding signals 1 to 31; siginterrupt
// decides whether signal() sets SA_RESTART (signalRestarts, signals.h).
#include <errno.h>
#include <signal.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "libc/real_libc.h"
#include "libc/shim.h"
#include "signals/signals.h"

// These interfaces are deprecated in <signal.h>; interposing them is the point.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace arbrun {
namespace {

// A BSD int mask as a sigset_t, and back (signals 1 to 31; glibc's sigmask(sig) is 1 << (sig - 1)).
sigset_t fromBsd(int mask) {
    sigset_t set;
    sigemptyset(&set);
    for (int sig = 1; sig < 32; ++sig) {
        if (unsigned(mask) & (1u << (sig - 1))) sigaddset(&set, sig);
    }
    return set;
}

int toBsd(const sigset_t& set) {
    unsigned mask = 0;
    for (int sig = 1; sig < 32; ++sig) {
        if (sigismember(&set, sig) == 1) mask |= 1u << (sig - 1);
    }
    return int(mask);
}

int bsdMask(int how, int mask) {
    const sigset_t set = fromBsd(mask);
    sigset_t old;
    if (sigprocmask(how, &set, &old) != 0) return -1;
    return toBsd(old);
}

int oneSignal(int how, int sig) {
    sigset_t set;
    sigemptyset(&set);
    if (sigaddset(&set, sig) != 0) return -1;  // EINVAL
    return sigprocmask(how, &set, nullptr);
}

}  // namespace
}  // namespace arbrun

using namespace arbrun;

ARBRUN_EXPORT int sigsetmask(int mask) {
    if (!onUserThread()) return ARBRUN_REAL(sigsetmask)(mask);
    return bsdMask(SIG_SETMASK, mask);
}

ARBRUN_EXPORT int sigblock(int mask) {
    if (!onUserThread()) return ARBRUN_REAL(sigblock)(mask);
    return bsdMask(SIG_BLOCK, mask);
}

ARBRUN_EXPORT int siggetmask() {
    if (!onUserThread()) return ARBRUN_REAL(siggetmask)();
    return bsdMask(SIG_BLOCK, 0);
}

ARBRUN_EXPORT int sighold(int sig) {
    if (!onUserThread()) return ARBRUN_REAL(sighold)(sig);
    return oneSignal(SIG_BLOCK, sig);
}

ARBRUN_EXPORT int sigrelse(int sig) {
    if (!onUserThread()) return ARBRUN_REAL(sigrelse)(sig);
    return oneSignal(SIG_UNBLOCK, sig);
}

// The dispositions go through the interposed sigaction on any thread: the wrapper's table must
// know every one.
ARBRUN_EXPORT int sigignore(int sig) {
    struct sigaction act {};
    act.sa_handler = SIG_IGN;
    sigemptyset(&act.sa_mask);
    return sigaction(sig, &act, nullptr);
}

// System V sigset: SIG_HOLD blocks the signal and keeps its disposition; anything else becomes the
// disposition and unblocks it. Returns SIG_HOLD if the signal was blocked before, else the old
// disposition.
ARBRUN_EXPORT sighandler_t sigset(int sig, sighandler_t disposition) {
    sigset_t one, old;
    sigemptyset(&one);
    if (sigaddset(&one, sig) != 0) return SIG_ERR;
    struct sigaction previous {};
    if (disposition == SIG_HOLD) {
        if (sigaction(sig, nullptr, &previous) != 0) return SIG_ERR;
        if (pthread_sigmask(SIG_BLOCK, &one, &old) != 0) return SIG_ERR;
    } else {
        struct sigaction act {};
        act.sa_handler = disposition;
        sigemptyset(&act.sa_mask);
        if (sigaction(sig, &act, &previous) != 0) return SIG_ERR;
        if (pthread_sigmask(SIG_UNBLOCK, &one, &old) != 0) return SIG_ERR;
    }
    return sigismember(&old, sig) == 1 ? SIG_HOLD : previous.sa_handler;
}

// BSD sigpause(mask): waits with the BSD mask `mask` in force. <signal.h> names the XPG form
// sigpause in C++ (an asm alias of __xpg_sigpause), so the BSD symbol is defined by its asm name.
extern "C" ARBRUN_EXPORT int bsdSigpause(int mask) __asm__("sigpause");
int bsdSigpause(int mask) {
    if (!onUserThread()) {
        using BsdSigpause = int (*)(int);
        static const auto real = reinterpret_cast<BsdSigpause>(lookupReal("sigpause"));
        return real(mask);
    }
    const sigset_t set = fromBsd(mask);
    return sigsuspend(&set);
}

// glibc's entry for both forms: isSig selects XPG (remove `sigOrMask` from the current mask) or
// BSD (a mask).
ARBRUN_EXPORT int __sigpause(int sigOrMask, int isSig) {
    if (!onUserThread()) return ARBRUN_REAL(__sigpause)(sigOrMask, isSig);
    if (!isSig) return bsdSigpause(sigOrMask);
    sigset_t set;
    if (sigprocmask(SIG_BLOCK, nullptr, &set) != 0 || sigdelset(&set, sigOrMask) != 0) return -1;
    return sigsuspend(&set);
}

// What <signal.h> calls sigpause under _XOPEN_SOURCE.
ARBRUN_EXPORT int __xpg_sigpause(int sig) {
    return __sigpause(sig, 1);
}

// Whether a handler of `sig` restarts interrupted calls: the disposition's SA_RESTART now, and
// signal()'s choice from now on.
ARBRUN_EXPORT int siginterrupt(int sig, int interrupt) {
    struct sigaction act {};
    if (sigaction(sig, nullptr, &act) != 0) return -1;
    setSignalRestarts(sig, !interrupt);
    if (interrupt) {
        act.sa_flags &= ~SA_RESTART;
    } else {
        act.sa_flags |= SA_RESTART;
    }
    return sigaction(sig, &act, nullptr);
}

// System V signal(): a handler runs once (the disposition resets to SIG_DFL), without the signal
// blocked, and interrupted calls fail with EINTR.
ARBRUN_EXPORT sighandler_t __sysv_signal(int sig, sighandler_t handler) {
    struct sigaction act {
    }, old{};
    act.sa_handler = handler;
    act.sa_flags = SA_RESETHAND | SA_NODEFER;
    sigemptyset(&act.sa_mask);
    if (sigaction(sig, &act, &old) != 0) return SIG_ERR;
    return old.sa_handler;
}

ARBRUN_EXPORT sighandler_t sysv_signal(int sig, sighandler_t handler) {
    return __sysv_signal(sig, handler);
}
