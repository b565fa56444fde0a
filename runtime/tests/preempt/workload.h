// Compute kernels for the preemption tests, built into a shared library of their own: the runtime
// never preempts code in its own object, which for these tests is the test executable.
#pragma once

#include <atomic>
#include <cstdint>

namespace preempt_workload {

// Spins until `stop` is set, calling nothing.
void spinUntil(const std::atomic<bool>* stop);

// A fixed amount of floating-point and integer work that keeps many values live in registers
// (xmm and general); returns a checksum that depends on every step, so state lost or corrupted by
// a switch in the middle changes it.
// Spins for `ns` nanoseconds of wall time, calling nothing but clock_gettime between long runs of
// pause instructions (so an interrupt almost always lands in this library, a safe point).
void spinFor(uint64_t ns);

uint64_t mixedWork(uint64_t seed, uint64_t iterations);

// A system call issued by the `syscall` instruction in this library (outside libc, so syscall user
// dispatch traps it), the other three arguments zero; the kernel's convention: -errno on failure.
long rawSyscall3(long number, long a, long b, long c);

// Fills xmm0-xmm15 and the callee- and caller-saved general registers that a `syscall` keeps
// (all but rax, rcx, r11) with values derived from `seed`, issues the raw system call `number`
// (no arguments) and returns how many of those registers differ afterwards (0: all survived).
int rawSyscallClobbers(long number, uint64_t seed);

}  // namespace preempt_workload
