// One system call through the `syscall` instruction itself (x86-64), bypassing libc and so any
// interposed libc symbol, as libgomp, Go and JIT code issue them: returns the kernel's result,
// -errno on failure. rcx and r11 are clobbered by the instruction; "memory" because the kernel
// reads and writes through the pointer arguments. For the compat programs and benchmarks that
// wait outside libc.
#pragma once

#if defined(__x86_64__)
static inline long raw6(long nr, long a, long b, long c, long d, long e, long f) {
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}
#endif
