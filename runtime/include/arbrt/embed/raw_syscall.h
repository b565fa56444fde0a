// Raw system calls for the runtime and the preload library: no errno (the result is -errno on
// failure) and none of the preload's interposed functions, so they are safe in signal handlers, on
// any TCB, and from code that must not re-enter the preload (libc's wrappers would come back to
// it).
//
// They are issued by calling arbrtSyscallEntry, a `syscall; ret` sequence: at first one in the
// runtime's own code, and once syscall user dispatch is set up (syscall_dispatch.h) one found in
// libc's text, the only range a carrier may issue system calls from without trapping. So the
// runtime's own calls never trap, even with every signal blocked (a blocked SIGSYS that the kernel
// must force kills the process).
#pragma once

namespace arbrt {

// The `syscall; ret` the runtime calls (hidden; written once by the syscall-dispatch set-up,
// before any carrier enables dispatch, and only ever from one valid sequence to another, so a
// racing reader gets either).
extern "C" __attribute__((visibility("hidden"))) void* arbrtSyscallEntry;

// The call steps over the caller's red zone first: `call` pushes a return address below %rsp,
// where a leaf function may keep data the compiler does not know the asm touches.
inline long rawSyscall(long n, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0,
                       long f = 0) {
    long ret;
    register long r10 asm("r10") = d;
    register long r8 asm("r8") = e;
    register long r9 asm("r9") = f;
    asm volatile(
        "lea -128(%%rsp), %%rsp\n\t"
        "call *%[entry]\n\t"
        "lea 128(%%rsp), %%rsp"
        : "=a"(ret)
        : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9), [entry] "r"(arbrtSyscallEntry)
        : "rcx", "r11", "memory");
    return ret;
}

}  // namespace arbrt
