// System calls the program issues with the `syscall` instruction outside libc (libgomp's futexes,
// JIT and hand-written wrappers), caught by the runtime's syscall user dispatch and handed here on
// the calling user thread, in normal context (runtime/src/monitor/syscall_dispatch.h). Each goes
// the way its libc wrapper goes under this library, so a raw call never blocks a carrier silently:
// - futex: the emulation (futex.cc), so libgomp's waits are user-level waits that pair with
//   syscall(SYS_futex) and every other waker;
// - read/write and their vector, positional and socket forms, accept, connect, poll, ppoll,
//   select, pselect6, epoll_wait, epoll_pwait, epoll_pwait2, nanosleep, clock_nanosleep, wait4,
//   sched_yield: the interposed wrappers (readiness waits, timers, yields at user level);
// - ptrace: the requests that start a trace are refused as libc's ptrace refuses them (ptrace.h);
// - signalfd, signalfd4: the emulation on virtual signals (signalfd.h), and close, dup2, dup3,
//   close_range through their interposed functions, which keep its registrations right;
// - setpriority, getpriority, sched_setaffinity, sched_getaffinity, sched_setscheduler,
//   sched_getscheduler, sched_setparam, sched_getparam, sched_setattr, sched_getattr: the calling
//   user thread's own nice value, affinity and policy (schedule.h, identity.h) when they are
//   about it, as the libc calls are;
// - set_robust_list, get_robust_list, set_tid_address, prctl(PR_GET_TID_ADDRESS): registrations
//   the kernel keeps per kernel thread, kept per user thread instead (robust_list.h,
//   tid_address.h);
// - rt_sigprocmask, rt_sigaction, rt_sigpending, rt_sigsuspend, rt_sigtimedwait, pause,
//   sigaltstack: the virtual per-user-thread masks, dispositions, pending sets and alternate
//   stacks (signals.cc), as the libc wrappers would; a raw call must not change a carrier's real
//   mask, nor wait in the kernel for a signal that is pending only in the virtual sets;
// - getrusage: RUSAGE_THREAD is the calling user thread's own CPU time (cpuclock.cc), as libc's;
// - exit (of one thread): pthread_exit, which ends the user thread, not its carrier;
// - calls that set credential state the kernel keeps per thread (set*id, capset, some prctl
//   options, seccomp filters): on every kernel thread (credentials.h);
// - io_uring_setup and io_uring_register: without what ties a ring to one kernel thread
//   (io_uring.h);
// - anything else: made as it is, bracketed as a blocking call (the monitor lends the core to a
//   spare carrier if it lasts while others wait), and mmap-like calls refresh the shared-mapping
//   table futex.cc consults. A signal for the thread interrupts it as natively: one that lands on
//   the call runs its handler there (ProgramSyscall), one sent to the thread cuts a restarted call
//   short and runs its handler before the call is made again (passThrough).
// The result is the kernel's convention (-errno on failure) and errno is left as the program had
// it, as with the instruction itself. Not emulated: a raw call is no cancellation point natively,
// while the wrappers used here act on a pending deferred cancellation as the libc ones do.
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "arbrt/embed/raw_syscall.h"
#include "io/io_uring.h"
#include "io/raw_syscalls.h"
#include "libc/shim.h"
#include "process/credentials.h"
#include "process/ptrace.h"
#include "process/user_dispatch.h"
#include "signals/interrupt.h"
#include "signals/kernel_sigaction.h"
#include "signals/signalfd.h"
#include "signals/signals.h"
#include "sync/futex.h"
#include "sync/robust_list.h"
#include "sync/shared_memory.h"
#include "threads/schedule.h"
#include "threads/tid_address.h"

namespace arbrun {
namespace {

// A libc-style result (-1 and errno on failure) in the kernel's convention.
long kernelResult(long r) {
    return r == -1 ? -long(errno) : r;
}

template <typename T>
T* ptr(long v) {
    return reinterpret_cast<T*>(v);
}

// The kernel's 8-byte signal set in a libc sigset_t (signals 1-64).
sigset_t* toSigset(const uint64_t* kernel, sigset_t* out) {
    if (!kernel) return nullptr;
    sigemptyset(out);
    std::memcpy(out, kernel, sizeof *kernel);
    return out;
}

// rt_sigprocmask(how, set, old, size) on the calling user thread's virtual mask.
long sigprocmaskCall(const long a[6]) {
    if (size_t(a[3]) != sizeof(uint64_t)) return -EINVAL;
    sigset_t set, old;
    const int err = pthread_sigmask(int(a[0]), toSigset(ptr<const uint64_t>(a[1]), &set),
                                    a[2] ? &old : nullptr);
    if (err != 0) return -err;
    if (a[2]) std::memcpy(ptr<uint64_t>(a[2]), &old, sizeof(uint64_t));
    return 0;
}

// rt_sigaction(sig, act, old, size) on the virtual dispositions (the restorer is libc's anyway).
long sigactionCall(const long a[6]) {
    if (size_t(a[3]) != sizeof(uint64_t)) return -EINVAL;
    const auto* act = ptr<const KernelSigaction>(a[1]);
    struct sigaction in {
    }, out{};
    if (act) {
        in.sa_sigaction = act->handler;
        in.sa_flags = int(act->flags & ~kSaRestorer);
        toSigset(&act->mask, &in.sa_mask);
    }
    if (sigaction(int(a[0]), act ? &in : nullptr, a[2] ? &out : nullptr) != 0) return -errno;
    if (auto* old = ptr<KernelSigaction>(a[2])) {
        old->handler = out.sa_sigaction;
        old->flags = unsigned(out.sa_flags);
        old->restorer = nullptr;
        std::memcpy(&old->mask, &out.sa_mask, sizeof old->mask);
    }
    return 0;
}

// rt_sigpending(set, size): the virtual pending set, as sigpending() reports it.
long sigpendingCall(const long a[6]) {
    if (size_t(a[1]) > sizeof(uint64_t))
        return -EINVAL;  // the kernel's check (smaller: fewer bytes)
    if (!a[0]) return -EFAULT;
    sigset_t set;
    if (sigpending(&set) != 0) return -errno;
    std::memcpy(ptr<void>(a[0]), &set, size_t(a[1]));
    return 0;
}

// rt_sigsuspend(mask, size): waits with the virtual mask `mask` until a handler ran (-EINTR).
long sigsuspendCall(const long a[6]) {
    if (size_t(a[1]) != sizeof(uint64_t)) return -EINVAL;
    if (!a[0]) return -EFAULT;
    sigset_t mask;
    return kernelResult(sigsuspend(toSigset(ptr<const uint64_t>(a[0]), &mask)));
}

// rt_sigtimedwait(set, info, timeout, size): the sigwait family on virtual pending signals.
long sigtimedwaitCall(const long a[6]) {
    if (size_t(a[3]) != sizeof(uint64_t)) return -EINVAL;
    if (!a[0]) return -EFAULT;
    sigset_t set;
    return kernelResult(sigtimedwait(toSigset(ptr<const uint64_t>(a[0]), &set),
                                     ptr<siginfo_t>(a[1]), ptr<const timespec>(a[2])));
}

// pselect6(nfds, in, out, ex, timeout, {mask, size}): the sixth argument points to the mask and
// its size (8), or is null.
long pselectCall(const long a[6]) {
    struct MaskArgument {
        const uint64_t* mask;
        size_t size;
    };
    const auto* m = ptr<const MaskArgument>(a[5]);
    if (m && m->mask && m->size != sizeof(uint64_t)) return -EINVAL;
    sigset_t mask;
    return kernelResult(pselect(int(a[0]), ptr<fd_set>(a[1]), ptr<fd_set>(a[2]), ptr<fd_set>(a[3]),
                                ptr<const timespec>(a[4]), toSigset(m ? m->mask : nullptr, &mask)));
}

// sched_getaffinity(pid, size, mask): the kernel's call first, which checks the size and returns
// how many bytes it wrote; for the calling user thread those bytes are then its own mask's.
long affinityCall(const long a[6]) {
    const long r = arbrt::rawSyscall(SYS_sched_getaffinity, a[0], a[1], a[2]);
    if (r <= 0 || !isSelf(pid_t(a[0]))) return r;
    return sched_getaffinity(pid_t(a[0]), size_t(r), ptr<cpu_set_t>(a[2])) == 0 ? r : -errno;
}

// Made as it is, as a blocking call (the trampoline runs only on user threads). A signal sent to
// this thread (pthread_kill) reaches it through SIGCANCEL, whose own SA_RESTART would restart the
// call without its handler: the call is marked interruptible, so that restart becomes EINTR
// (cutBlockingCallShort); the handlers then run here, outside the call's blocking-call bracket
// (they may jump out), and the call is made again when every one had SA_RESTART, as the kernel
// would have done.
long passThrough(long n, const long a[6]) {
    long r;
    for (;;) {
        {
            const ProgramSyscall program;  // bracketed, interruptible, and the program's own
            r = arbrt::rawSyscall(n, a[0], a[1], a[2], a[3], a[4], a[5]);
        }
        if (r != -EINTR || !takeBlockingCallCut()) break;
        // Signals only: a raw call is no cancellation point. None left: another thread took it.
        bool restartable = true;
        if (signalInterruptPending() && deliverPendingSignals(&restartable) > 0 && !restartable)
            break;  // a handler without SA_RESTART: EINTR, as natively
    }
    if (r >= 0 && changesMappings(n)) noteMappingsChanged();
    return r;
}

long route(long n, const long a[6]) {
    switch (n) {
        case SYS_futex: {
            long args[6] = {a[0], a[1], a[2], a[3], a[4], a[5]};
            long r;
            if (emulateFutex(args, &r)) return kernelResult(r);
            return passThrough(n, a);
        }
        case SYS_read:
            return kernelResult(read(int(a[0]), ptr<void>(a[1]), size_t(a[2])));
        case SYS_write:
            return kernelResult(write(int(a[0]), ptr<const void>(a[1]), size_t(a[2])));
        case SYS_readv:
            return kernelResult(readv(int(a[0]), ptr<const iovec>(a[1]), int(a[2])));
        case SYS_writev:
            return kernelResult(writev(int(a[0]), ptr<const iovec>(a[1]), int(a[2])));
        case SYS_pread64:
            return kernelResult(pread(int(a[0]), ptr<void>(a[1]), size_t(a[2]), off_t(a[3])));
        case SYS_pwrite64:
            return kernelResult(
                pwrite(int(a[0]), ptr<const void>(a[1]), size_t(a[2]), off_t(a[3])));
        case SYS_recvfrom:
            return kernelResult(recvfrom(int(a[0]), ptr<void>(a[1]), size_t(a[2]), int(a[3]),
                                         ptr<sockaddr>(a[4]), ptr<socklen_t>(a[5])));
        case SYS_sendto:
            return kernelResult(sendto(int(a[0]), ptr<const void>(a[1]), size_t(a[2]), int(a[3]),
                                       ptr<const sockaddr>(a[4]), socklen_t(a[5])));
        case SYS_recvmsg:
            return kernelResult(recvmsg(int(a[0]), ptr<msghdr>(a[1]), int(a[2])));
        case SYS_sendmsg:
            return kernelResult(sendmsg(int(a[0]), ptr<const msghdr>(a[1]), int(a[2])));
        case SYS_accept:
            return kernelResult(accept(int(a[0]), ptr<sockaddr>(a[1]), ptr<socklen_t>(a[2])));
        case SYS_accept4:
            return kernelResult(
                accept4(int(a[0]), ptr<sockaddr>(a[1]), ptr<socklen_t>(a[2]), int(a[3])));
        case SYS_connect:
            return kernelResult(connect(int(a[0]), ptr<const sockaddr>(a[1]), socklen_t(a[2])));
        case SYS_poll:
            return kernelResult(poll(ptr<pollfd>(a[0]), nfds_t(a[1]), int(a[2])));
        case SYS_ppoll: {
            if (a[3] && size_t(a[4]) != sizeof(uint64_t)) return -EINVAL;
            sigset_t mask;
            return kernelResult(ppoll(ptr<pollfd>(a[0]), nfds_t(a[1]), ptr<const timespec>(a[2]),
                                      toSigset(ptr<const uint64_t>(a[3]), &mask)));
        }
        case SYS_select:
            return kernelResult(select(int(a[0]), ptr<fd_set>(a[1]), ptr<fd_set>(a[2]),
                                       ptr<fd_set>(a[3]), ptr<timeval>(a[4])));
        case SYS_epoll_wait:
            return kernelResult(
                epoll_wait(int(a[0]), ptr<epoll_event>(a[1]), int(a[2]), int(a[3])));
        case SYS_epoll_pwait: {
            if (a[4] && size_t(a[5]) != sizeof(uint64_t)) return -EINVAL;
            sigset_t mask;
            return kernelResult(epoll_pwait(int(a[0]), ptr<epoll_event>(a[1]), int(a[2]), int(a[3]),
                                            toSigset(ptr<const uint64_t>(a[4]), &mask)));
        }
        case SYS_epoll_pwait2: {
            if (a[4] && size_t(a[5]) != sizeof(uint64_t)) return -EINVAL;
            sigset_t mask;
            return kernelResult(epoll_pwait2(int(a[0]), ptr<epoll_event>(a[1]), int(a[2]),
                                             ptr<const timespec>(a[3]),
                                             toSigset(ptr<const uint64_t>(a[4]), &mask)));
        }
        case SYS_pselect6:
            return pselectCall(a);
        case SYS_nanosleep:
            return kernelResult(nanosleep(ptr<const timespec>(a[0]), ptr<timespec>(a[1])));
        case SYS_clock_nanosleep:  // returns the error number itself
            return -long(clock_nanosleep(clockid_t(a[0]), int(a[1]), ptr<const timespec>(a[2]),
                                         ptr<timespec>(a[3])));
        case SYS_wait4:
            return kernelResult(
                wait4(pid_t(a[0]), ptr<int>(a[1]), int(a[2]), ptr<struct rusage>(a[3])));
        case SYS_sched_yield:
            return kernelResult(sched_yield());
        case SYS_rt_sigprocmask:
            return sigprocmaskCall(a);
        case SYS_rt_sigaction:
            return sigactionCall(a);
        case SYS_rt_sigpending:
            return sigpendingCall(a);
        case SYS_rt_sigsuspend:
            return sigsuspendCall(a);
        case SYS_rt_sigtimedwait:
            return sigtimedwaitCall(a);
        case SYS_pause:
            return kernelResult(pause());
        case SYS_sigaltstack:
            return kernelResult(sigaltstack(ptr<const stack_t>(a[0]), ptr<stack_t>(a[1])));
        case SYS_exit:
            pthread_exit(nullptr);
        case SYS_set_robust_list:
        case SYS_get_robust_list: {
            const long r = userRobustListCall(n, a);
            return r == kNotHandled ? passThrough(n, a) : r;
        }
        case SYS_setpriority:
        case SYS_getpriority:
            if (const long r = priorityCall(n, a); r != kNotHandled) return r;
            return passThrough(n, a);
        case SYS_sched_setaffinity:
            return kernelResult(
                sched_setaffinity(pid_t(a[0]), size_t(a[1]), ptr<const cpu_set_t>(a[2])));
        case SYS_sched_getaffinity:
            return affinityCall(a);
        case SYS_sched_setscheduler:
            return kernelResult(
                sched_setscheduler(pid_t(a[0]), int(a[1]), ptr<const sched_param>(a[2])));
        case SYS_sched_setparam:
            return kernelResult(sched_setparam(pid_t(a[0]), ptr<const sched_param>(a[1])));
        case SYS_sched_getscheduler:
            return kernelResult(sched_getscheduler(pid_t(a[0])));
        case SYS_sched_getparam:
            return kernelResult(sched_getparam(pid_t(a[0]), ptr<sched_param>(a[1])));
        case SYS_sched_setattr:
        case SYS_sched_getattr:
            if (const long r = schedAttrCall(n, a); r != kNotHandled) return r;
            return passThrough(n, a);
        case SYS_ptrace:
            if (const long r = rawPtraceCall(a); r != kNotHandled) return r;
            return passThrough(n, a);
        case SYS_signalfd4:
        case SYS_signalfd:
            return signalfdCall(int(a[0]), ptr<const sigset_t>(a[1]), size_t(a[2]),
                                n == SYS_signalfd4 ? int(a[3]) : 0);
        case SYS_getrusage:
            return kernelResult(getrusage(int(a[0]), ptr<rusage>(a[1])));
        case SYS_close:
            return kernelResult(close(int(a[0])));
        case SYS_dup2:
            return kernelResult(dup2(int(a[0]), int(a[1])));
        case SYS_dup3:
            return kernelResult(dup3(int(a[0]), int(a[1]), int(a[2])));
        case SYS_close_range:
            return kernelResult(close_range(unsigned(a[0]), unsigned(a[1]), int(a[2])));
        case SYS_set_tid_address:
        case SYS_prctl:
            if (const long r = userTidAddressCall(n, a); r != kNotHandled) return r;
            if (n == SYS_prctl) {
                if (const long r = userDispatchCall(a); r != kNotHandled) return r;
            }
            [[fallthrough]];
        default: {
            long r;
            if (credentialCall(n, a, &r)) return r;  // credential state (credentials.h)
            if (ioUringCall(n, a, &r)) return r;     // io_uring rings (io_uring.h)
            return passThrough(n, a);
        }
    }
}

}  // namespace

long handleRawSyscall(long number, const long args[6]) {
    const int savedErrno = errno;
    const long result = route(number, args);
    if (signalInterruptPending()) runSignalHandlers();  // as on the kernel's way back
    errno = savedErrno;
    return result;
}

}  // namespace arbrun
