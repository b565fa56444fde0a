// System calls a program issues with the `syscall` instruction itself, outside libc (libgomp's
// futexes, JIT code, hand-written wrappers): caught with Linux syscall user dispatch so they never
// block a carrier silently.
//
// Every carrier turns dispatch on for its own kernel thread with libc's executable segment as the
// allowed range: libc's calls (including every wrapper the preload library interposes) cost
// nothing extra; a call from anywhere else raises a thread-directed SIGSYS before it runs. The
// runtime's own raw calls go through a `syscall; ret` inside libc's text
// (arbrt/embed/raw_syscall.h), so they never trap, not even with every signal blocked. The SIGSYS
// handler (arbrt::onSyscallDispatchSignal) then does one of three things:
//   - in code where the thread must not switch (unsafe code as preemption defines it: the
//     runtime, libc, the loader, the vDSO, ...), or inside a signal handler: it makes the call
//     itself, there and then, and returns its result;
//   - for the calls that create a thread or process from the caller's own registers and stack
//     (clone, clone3, fork, vfork): it lets the instruction run where it is, with the carrier's
//     selector set to allow, until the thread's next switch re-arms it;
//   - otherwise: it redirects the thread, in normal context, into a trampoline that calls the
//     embedder's handler (RuntimeOptions::rawSyscallHandler) with the call's number and arguments
//     and returns to the instruction after the `syscall` with the result in %rax, every other
//     register and the FP/vector state as they were. The handler may park the thread (a futex
//     wait becomes a user-level wait) like any interposed call.
// SIGSYS must never be blocked on a carrier while a program's code runs: the kernel forces a
// blocked SIGSYS through with the default action, which kills the process.
#pragma once

#include <cstdint>
#include <string>

namespace arbrt::detail {

struct Carrier;

// Start-up, with options.rawSyscallHandler set: finds libc's text and checks the kernel; on
// success, points arbrtSyscallEntry into libc and returns true. False (dispatch off, the reason
// in *why) otherwise.
bool initSyscallDispatch(std::string* why);
// On a carrier's own kernel thread (owner or spare) before it runs user threads: turns dispatch
// on for it when initSyscallDispatch succeeded.
void enableSyscallDispatch(Carrier* c);
// Whether dispatch is on for this runtime (for diagnostics).
bool syscallDispatchEnabled();
// System calls trapped so far, and how many of them ran in the trampoline (stats).
uint64_t trappedSyscallCount();

// From a signal handler on a user thread: makes the interrupted thread enter the system-call
// trampoline as soon as the handler returns, resuming at `resumePc` afterwards; the call's number
// must be in the context's %rax. Writes one word below the thread's red zone.
void enterSyscallTrampoline(void* ucontext, uintptr_t resumePc);

// The value of Carrier::syscallSelector that lets calls through; the other one traps them.
constexpr uint8_t kSyscallsAllowed = 0;  // SYSCALL_DISPATCH_FILTER_ALLOW
constexpr uint8_t kSyscallsTrapped = 1;  // SYSCALL_DISPATCH_FILTER_BLOCK

}  // namespace arbrt::detail
