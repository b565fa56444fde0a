// Preemption at safe points: the safety net for a user thread that computes without calling the
// runtime while other threads wait to run on its core (Shenango and Go interrupt such a runner with
// a signal). The monitor asks (requestPreemption); the carrier's signal handler checks that the
// interrupted code is at a safe point and, if so, makes it call the runtime's yield as soon as the
// handler returns, as if the thread had called it itself (the trampoline saves every register,
// the flags and the extended FP/vector state around the call).
//
// Safe point: the interrupted instruction lies outside the objects whose code may hold locks the
// runtime cannot see or that must not be re-entered (the runtime's own object, libc, the dynamic
// loader, libstdc++, libgcc_s, libunwind, and the vDSO, which the runtime and libc call with their
// locks held), and the thread was not inside a signal handler (the
// carrier's real signal mask is the one it had when it started). A thread that is never seen at
// a safe point is simply not preempted (the runtime stays cooperative for it).
#pragma once

#include <cstdint>

namespace arbrt::detail {

struct Core;
struct Carrier;

// Start-up: the objects no trampoline may interrupt (unsafe code). Idempotent; also part of
// initPreemption().
void initSafePoints();
// The FP/vector state size the trampolines save, found (CPUID) by the first signal handler that
// sends a thread into one, not at start-up: each CPUID is a VM exit, ~10 us on a VM, and most
// programs never reach a trampoline. Call before redirecting a context there. Async-signal-safe.
void ensureFpStateKnown();
// Start-up: initSafePoints(), and the runtime's own preemption handler if it owns the signal.
void initPreemption();
// A carrier records the signal mask it runs user threads with (its own kernel thread, at start).
void recordCarrierSignalMask(Carrier* c);
// Whether `mask` (an interrupted context's) is carrier c's base mask, but for the signals the
// embedding layer holds (embed::noteHeldSignal): the carrier then runs no handler of the program's.
bool atCarrierBaseMask(const Carrier* c, uint64_t mask);
// embed::noteHeldSignal's record.
void noteCarrierHeldSignal(int sig);
// Monitor: asks the carrier running `core` to preempt its runner, which has not switched since
// the core's switch count was `switches`. Refreshes the unsafe ranges first if objects were
// loaded since the last look. No-op when preemption is off.
// `flags`: kRetakeRequest (retake.h) asks for the call the carrier sleeps in to be re-issued
// instead.
void requestPreemption(Core* core, uint64_t switches, uint64_t flags = 0);
// Whether an interrupted instruction at `pc` lies in code preemption must never switch out of
// (the objects above, as scanned so far). For tests and diagnostics.
bool isUnsafeForPreemption(uintptr_t pc);
// How many threads were preempted so far (stats).
uint64_t preemptionCount();

}  // namespace arbrt::detail
