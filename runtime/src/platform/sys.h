// The runtime's system calls, in one place that tests can replace (as the daemon's arbd::Sys).
//
// Everything the scheduler asks of the kernel on its own behalf — futex waits and wakes, stack
// mappings, preemption signals — goes through sysCall(). In production that is rawSyscall() plus
// one relaxed load of a pointer that is null (a predictable branch next to a system call). A test
// installs an interceptor to answer chosen calls itself (an error, a spurious EINTR) and let the
// rest through, so failure paths are exercised against the real scheduler without test flags in
// production classes. The thread-pointer write (arch.h) and the calls the preload library forwards
// for the program stay raw: they are the program's, not the runtime's.
#pragma once

#include <atomic>

#include "arbrt/embed/raw_syscall.h"

namespace arbrt::detail {

// Answers a system call instead of the kernel: returns true with *result set (a value, or -errno)
// to answer it, false to let it through. Called on any thread, possibly a carrier with a runtime
// lock held or inside a signal handler: it must not block, allocate or call back into the runtime.
using SyscallInterceptor = bool (*)(long nr, const long args[6], long* result);

// Null except while a test runs with one installed. Relaxed: a test installs it before it starts
// the work that should see it and removes it after that work is joined.
extern std::atomic<SyscallInterceptor> gSyscallInterceptor;

// rawSyscall(), unless an interceptor answers first. Returns the kernel's result or -errno.
inline long sysCall(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0,
                    long f = 0) {
    if (SyscallInterceptor hook = gSyscallInterceptor.load(std::memory_order_relaxed))
        [[unlikely]] {
        const long args[6] = {a, b, c, d, e, f};
        long result;
        if (hook(nr, args, &result)) return result;
    }
    return rawSyscall(nr, a, b, c, d, e, f);
}

// True when a raw result is an error (-4095..-1), as the kernel's ABI defines it.
inline bool sysFailed(long result) {
    return static_cast<unsigned long>(result) > static_cast<unsigned long>(-4096L);
}

}  // namespace arbrt::detail
