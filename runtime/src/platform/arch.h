// x86-64 primitives the runtime needs on its hot paths: TSC, thread-pointer switching, raw system
// calls (arbrt/embed/raw_syscall.h; not libc's syscall(), because the preload layer interposes
// syscall() and libc wrappers write errno, which lives in whichever user thread's TLS is current).
#pragma once

#include <sys/syscall.h>

#include <atomic>
#include <cstdint>
#include <ctime>

#include "arbrt/embed/raw_syscall.h"
#include "platform/sys.h"

namespace arbrt::detail {

inline uint64_t rdtsc() {
    uint32_t lo, hi;
    asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t{hi} << 32) | lo;
}

inline void cpuRelax() {
    __builtin_ia32_pause();
}

using arbrt::rawSyscall;

// FUTEX_WAIT_PRIVATE with a relative timeout (nullptr: none). Returns 0 or -errno (EAGAIN,
// ETIMEDOUT, EINTR): callers always re-check their condition.
inline long futexWait(std::atomic<uint32_t>* word, uint32_t expected, const timespec* timeout) {
    return sysCall(SYS_futex, reinterpret_cast<long>(word), 128 /*FUTEX_WAIT_PRIVATE*/, expected,
                   reinterpret_cast<long>(timeout));
}

inline long futexWake(std::atomic<uint32_t>* word, int count) {
    return sysCall(SYS_futex, reinterpret_cast<long>(word), 129 /*FUTEX_WAKE_PRIVATE*/, count);
}

// True when the CPU and kernel let user code write the %fs base directly (~13 ns vs ~150 ns for the
// arch_prctl system call on bare metal, and 3.5-4 us in a 2-vCPU VM without FSGSBASE; `arbrun
// doctor` measures it). Set once by start().
extern bool gHaveFsgsbase;

inline void setThreadPointer(void* tcb) {
    if (__builtin_expect(gHaveFsgsbase, 1)) {
        asm volatile("wrfsbase %0" ::"r"(tcb) : "memory");
    } else {
        rawSyscall(SYS_arch_prctl, 0x1002 /*ARCH_SET_FS*/, reinterpret_cast<long>(tcb));
    }
}

inline void* threadPointer() {
    void* tp;
    asm volatile("mov %%fs:0, %0" : "=r"(tp));
    return tp;
}

// Two words of the TCB header that glibc 2.36 leaves unused (tcbhead_t::__glibc_unused2, zero in
// every TCB glibc allocates; checked at start-up). The runtime finds its per-thread state through
// them without
// __thread variables (which follow the user thread) and without a system call:
//   kUserThreadSlot: in a user thread's TCB, its ThreadContext*; zero elsewhere.
//   kCarrierSlot:    in a carrier's own TCB, its Carrier*; zero elsewhere.
constexpr long kUserThreadSlot = 128;
constexpr long kCarrierSlot = 136;

template <typename T>
inline T* readTcbSlot(long offset) {
    T* value;
    asm volatile("mov %%fs:(%1), %0" : "=r"(value) : "r"(offset));
    return value;
}

inline void writeTcbSlot(void* tcb, long offset, void* value) {
    *reinterpret_cast<void**>(static_cast<char*>(tcb) + offset) = value;
}

}  // namespace arbrt::detail
