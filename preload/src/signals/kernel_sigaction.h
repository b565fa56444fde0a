// The kernel's struct sigaction, for the signals glibc reserves for itself (SIGCANCEL 32,
// SIGSETXID 33): glibc's sigaction() refuses them, so handlers for them go in with the raw
// rt_sigaction system call.
#pragma once

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace arbrun {

constexpr int kSigCancel = 32;  // glibc's SIGCANCEL (SIGRTMIN - 2 as glibc numbers them)
constexpr int kSigSetxid = 33;  // glibc's SIGSETXID
constexpr int kMaxSignal = 64;  // the kernel's _NSIG

// Signal `sig`'s bit in a kernel mask (signals 1..64: bits 0..63).
constexpr uint64_t bit(int sig) {
    return uint64_t{1} << (sig - 1);
}

struct KernelSigaction {
    void (*handler)(int, siginfo_t*, void*);
    unsigned long flags;
    void (*restorer)();
    uint64_t mask;
};
constexpr unsigned long kSaRestorer = 0x04000000;

// rt_sigaction(sig, act, old) on the kernel's structure; 0 or -1 with errno.
inline int kernelSigaction(int sig, const KernelSigaction* act, KernelSigaction* old) {
    return int(::syscall(SYS_rt_sigaction, sig, act, old, sizeof(uint64_t)));
}

}  // namespace arbrun
