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

}  // namespace preempt_workload
