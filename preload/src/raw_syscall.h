// A system call without libc: no errno (the result is -errno on failure) and none of this library's
// interposed functions, so it is safe in signal handlers, on any TCB, and from code that must not
// re-enter the library (libc's read/open would come back to our own interposers).
#pragma once

namespace arbrun {

inline long rawSyscall(long n, long a = 0, long b = 0, long c = 0, long d = 0) {
    long r;
    register long r10 asm("r10") = d;
    asm volatile("syscall"
                 : "=a"(r)
                 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
                 : "rcx", "r11", "memory");
    return r;
}

}  // namespace arbrun
