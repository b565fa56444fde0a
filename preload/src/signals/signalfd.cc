// signalfd emulated on virtual signals (signalfd.h).
#include "signals/signalfd.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "arbrt/embed/spin_lock.h"
#include "io/io_wait.h"
#include "io/raw_syscall.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "signals/interrupt.h"
#include "signals/signals.h"

namespace arbrun {

std::atomic<uint64_t> gSignalfdSignals{0};

namespace {

using arbrt::embed::SpinLock;

constexpr int kMaxFds = 1 << 16;   // numbers with a registration bit
constexpr int kMaxSignalfds = 64;  // registrations at once
constexpr uint64_t kUnwatchable = (uint64_t{1} << (SIGKILL - 1)) | (uint64_t{1} << (SIGSTOP - 1));

// One registered signalfd. `fd` is -1 while free; claimed by CAS, published (with its mask)
// before its bit in gRegistered, freed after the bit is cleared. `lock` serialises readers of one
// descriptor (the empty-then-take-then-signal sequence); handlers never take it.
struct Entry {
    std::atomic<int> fd{-1};
    std::atomic<uint64_t> mask{0};
    // Senders inside notifySignalfdsSlow() that may still write to `fd`: forgetSignalfd() waits
    // for none before the number may be closed and reused (seq_cst with `fd`: a sender that
    // counts itself after the wait began reads -1).
    std::atomic<uint32_t> senders{0};
    SpinLock lock;
};
Entry gEntries[kMaxSignalfds];
std::atomic<uint64_t> gRegistered[kMaxFds / 64];

bool registeredBit(int fd) {
    return fd >= 0 && fd < kMaxFds &&
           ((gRegistered[fd / 64].load(std::memory_order_acquire) >> (fd % 64)) & 1);
}

Entry* find(int fd) {
    if (!registeredBit(fd)) return nullptr;
    for (Entry& e : gEntries) {
        if (e.fd.load(std::memory_order_acquire) == fd) return &e;
    }
    return nullptr;
}

// Adds 1 to the eventfd (a raw write: async-signal-safe, and never blocks short of a counter at
// 2^64 - 2, which a signal per write cannot reach).
void signalEventfd(int fd) {
    const uint64_t one = 1;
    rawSyscall(SYS_write, fd, reinterpret_cast<long>(&one), sizeof one);
}

// Empties the eventfd. Only under the entry's lock, so no other reader of ours empties it between
// the look and the read, which therefore never blocks on a descriptor without O_NONBLOCK.
void emptyEventfd(int fd) {
    pollfd p{fd, POLLIN, 0};
    if (ARBRUN_REAL(poll)(&p, 1, 0) != 1 || !(p.revents & POLLIN)) return;
    uint64_t count;
    (void)ARBRUN_REAL(read)(fd, &count, sizeof count);
}

// The record the kernel's signalfd_copyinfo() fills for `info`.
void toRecord(const siginfo_t& info, signalfd_siginfo* out) {
    std::memset(out, 0, sizeof *out);
    out->ssi_signo = uint32_t(info.si_signo);
    out->ssi_errno = info.si_errno;
    out->ssi_code = info.si_code;
    const int sig = info.si_signo;
    const bool fromKernel = info.si_code > 0;
    if (fromKernel && sig == SIGCHLD) {
        out->ssi_pid = uint32_t(info.si_pid);
        out->ssi_uid = info.si_uid;
        out->ssi_status = info.si_status;
        out->ssi_utime = uint64_t(info.si_utime);
        out->ssi_stime = uint64_t(info.si_stime);
    } else if (fromKernel && (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
                              sig == SIGTRAP)) {
        out->ssi_addr = reinterpret_cast<uint64_t>(info.si_addr);
    } else if (fromKernel && sig == SIGPOLL) {
        out->ssi_band = uint32_t(info.si_band);
        out->ssi_fd = info.si_fd;
    } else if (info.si_code == SI_TIMER) {
        out->ssi_tid = uint32_t(info.si_timerid);
        out->ssi_overrun = uint32_t(info.si_overrun);
        out->ssi_int = info.si_value.sival_int;
        out->ssi_ptr = reinterpret_cast<uint64_t>(info.si_value.sival_ptr);
    } else {
        out->ssi_pid = uint32_t(info.si_pid);
        out->ssi_uid = info.si_uid;
        if (info.si_code == SI_QUEUE || info.si_code == SI_MESGQ) {
            out->ssi_int = info.si_value.sival_int;
            out->ssi_ptr = reinterpret_cast<uint64_t>(info.si_value.sival_ptr);
        }
    }
}

// Registers `mask` for `fd`; the bit last, so a reader that sees it finds the entry. The entry,
// or null when all are taken.
Entry* registerFd(int fd, uint64_t mask) {
    for (Entry& e : gEntries) {
        int expected = -1;
        if (e.fd.compare_exchange_strong(expected, fd, std::memory_order_acq_rel)) {
            e.mask.store(mask, std::memory_order_seq_cst);
            gRegistered[fd / 64].fetch_or(uint64_t{1} << (fd % 64), std::memory_order_acq_rel);
            return &e;
        }
    }
    return nullptr;
}

// After a mask is stored: pairs with notifySignalfds() (seq_cst both sides: either the sender
// sees the new mask, or this sees the signal pending).
void watch(Entry* e, uint64_t mask) {
    gSignalfdSignals.fetch_or(mask, std::memory_order_seq_cst);
    if (signalPendingFor(mask)) signalEventfd(e->fd.load(std::memory_order_relaxed));
}

void warnOnce(const char* why) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) std::fprintf(stderr, "arbrun: signalfd: %s\n", why);
}

}  // namespace

int signalfdCall(int fd, const sigset_t* mask, size_t maskSize, int flags) {
    if (flags & ~(SFD_NONBLOCK | SFD_CLOEXEC)) return -EINVAL;
    if (maskSize != sizeof(uint64_t)) return -EINVAL;
    if (!mask) return -EFAULT;
    uint64_t bits;
    std::memcpy(&bits, mask, sizeof bits);
    bits &= ~kUnwatchable;  // the kernel drops them silently
    if (fd != -1) {
        Entry* e = find(fd);
        if (!e) {  // the kernel's: EBADF, EINVAL for another kind, or a real signalfd's new mask
            const long r =
                rawSyscall(SYS_signalfd4, fd, reinterpret_cast<long>(mask), maskSize, flags);
            return int(r);
        }
        e->mask.store(bits, std::memory_order_seq_cst);
        watch(e, bits);
        return fd;
    }
    const int efd = eventfd(
        0, ((flags & SFD_NONBLOCK) ? EFD_NONBLOCK : 0) | ((flags & SFD_CLOEXEC) ? EFD_CLOEXEC : 0));
    if (efd < 0) return -errno;
    Entry* e = efd < kMaxFds ? registerFd(efd, bits) : nullptr;
    if (!e) {
        ARBRUN_REAL(close)(efd);
        warnOnce(efd >= kMaxFds ? "a descriptor numbered 65536 or more gets the kernel's signalfd, "
                                  "which does not see signals the program blocks"
                                : "more than 64 at once: the others get the kernel's signalfd, "
                                  "which does not see signals the program blocks");
        return int(rawSyscall(SYS_signalfd4, -1, reinterpret_cast<long>(mask), maskSize, flags));
    }
    watch(e, bits);
    return efd;
}

bool isEmulatedSignalfd(int fd) {
    return registeredBit(fd);
}

ssize_t readSignalfd(int fd, void* buf, size_t count) {
    for (;;) {
        Entry* e = find(fd);
        if (!e) return ARBRUN_REAL(read)(fd, buf, count);  // closed meanwhile
        if (count < sizeof(signalfd_siginfo)) {
            errno = EINVAL;
            return -1;
        }
        const size_t room = count / sizeof(signalfd_siginfo);
        auto* records = static_cast<signalfd_siginfo*>(buf);
        size_t taken = 0;
        {
            std::lock_guard<SpinLock> lock(e->lock);
            const uint64_t mask = e->mask.load(std::memory_order_relaxed);
            emptyEventfd(fd);
            siginfo_t info;
            while (taken < room) {
                if (takeSignalIn(mask, &info) == 0) break;
                toRecord(info, &records[taken++]);
            }
            if (signalPendingFor(mask)) signalEventfd(fd);  // some left (or arrived meanwhile)
        }
        if (taken > 0) {
            // Signals the thread does not block run their handlers on the way out, as the kernel
            // delivers them when a read returns (a reader kept busy by a flood still sees its
            // SIGALRM).
            takeSignalsAfterCall();
            return ssize_t(taken * sizeof(signalfd_siginfo));
        }
        if (isNonBlocking(fd)) {
            errno = EAGAIN;
            return -1;
        }
        // Nothing for this thread: wait until the eventfd is signalled. As natively, a handler
        // that runs meanwhile ends the read with EINTR unless it had SA_RESTART.
        switch (waitForFd(fd, EPOLLIN, arbrt::kWaitForever)) {
            case WaitOutcome::ready:
            case WaitOutcome::timedOut:
                break;
            case WaitOutcome::interrupted:
                if (deliverInterrupts()) {
                    errno = EINTR;
                    return -1;
                }
                break;
            case WaitOutcome::unsupported:
                errno = EBADF;  // closed while waited for
                return -1;
        }
    }
}

ssize_t readvSignalfd(int fd, const iovec* iov, int iovcnt) {
    size_t total = 0;
    for (int i = 0; i < iovcnt; ++i) total += iov[i].iov_len;
    signalfd_siginfo records[16];  // up to 16 a call, as a short read
    const ssize_t r = readSignalfd(fd, records, std::min(total, sizeof records));
    if (r <= 0) return r;
    const char* from = reinterpret_cast<const char*>(records);
    size_t left = size_t(r);
    for (int i = 0; i < iovcnt && left > 0; ++i) {
        const size_t n = std::min(left, iov[i].iov_len);
        std::memcpy(iov[i].iov_base, from, n);
        from += n;
        left -= n;
    }
    return r;
}

void forgetSignalfd(int fd) {
    if (!registeredBit(fd)) return;
    Entry* e = find(fd);
    gRegistered[fd / 64].fetch_and(~(uint64_t{1} << (fd % 64)), std::memory_order_acq_rel);
    if (!e) return;
    {
        std::lock_guard<SpinLock> lock(e->lock);  // no reader of ours is inside
        e->mask.store(0, std::memory_order_relaxed);
        e->fd.store(-1, std::memory_order_seq_cst);  // free: a registration may claim it now
    }
    while (e->senders.load(std::memory_order_seq_cst) != 0) sched_yield();
}

void copySignalfd(int from, int to) {
    Entry* e = find(from);
    if (!e || from == to || to < 0 || to >= kMaxFds) return;
    const uint64_t mask = e->mask.load(std::memory_order_relaxed);
    if (Entry* copy = registerFd(to, mask)) watch(copy, mask);
}

void forgetSignalfdRange(unsigned first, unsigned last) {
    for (Entry& e : gEntries) {
        const int fd = e.fd.load(std::memory_order_acquire);
        if (fd >= 0 && unsigned(fd) >= first && unsigned(fd) <= last) forgetSignalfd(fd);
    }
}

void renewSignalfdsAfterFork() {
    for (Entry& e : gEntries) {
        const int fd = e.fd.load(std::memory_order_relaxed);
        if (fd < 0) continue;
        const int status = int(rawSyscall(SYS_fcntl, fd, F_GETFL));
        const int descriptor = int(rawSyscall(SYS_fcntl, fd, F_GETFD));
        const int fresh = eventfd(0, (status >= 0 && (status & O_NONBLOCK)) ? EFD_NONBLOCK : 0);
        if (fresh < 0) continue;  // keeps the shared one: readiness may then be spurious
        rawSyscall(SYS_dup3, fresh, fd,
                   (descriptor >= 0 && (descriptor & FD_CLOEXEC)) ? O_CLOEXEC : 0);
        rawSyscall(SYS_close, fresh);
    }
    // Nothing is pending in a new process: the fresh eventfds are right as they are.
}

void notifySignalfdsSlow(int sig) {
    const uint64_t b = uint64_t{1} << (sig - 1);
    for (Entry& e : gEntries) {
        if (!(e.mask.load(std::memory_order_relaxed) & b)) continue;
        e.senders.fetch_add(1, std::memory_order_seq_cst);
        const int fd = e.fd.load(std::memory_order_seq_cst);
        if (fd >= 0 && (e.mask.load(std::memory_order_seq_cst) & b)) signalEventfd(fd);
        e.senders.fetch_sub(1, std::memory_order_release);
    }
}

}  // namespace arbrun

using namespace arbrun;

ARBRUN_EXPORT int signalfd(int fd, const sigset_t* mask, int flags) {
    if (!onUserThread()) return ARBRUN_REAL(signalfd)(fd, mask, flags);
    const int r = signalfdCall(fd, mask, sizeof(uint64_t), flags);
    if (r >= 0) return r;
    errno = -r;
    return -1;
}

// glibc 2.34 and later: close_range(first, last, flags). The numbers it closes are forgotten first
// (not on CLOSE_RANGE_UNSHARE failure paths' account: a failed call closed nothing natively either,
// and a forgotten registration only means a plain eventfd).
ARBRUN_EXPORT int close_range(unsigned first, unsigned last, int flags) {
    if (!(flags & CLOSE_RANGE_CLOEXEC)) forgetSignalfdRange(first, last);
    return ARBRUN_REAL(close_range)(first, last, flags);
}
