// Time: a calibrated TSC clock for the hot path, convertible to CLOCK_MONOTONIC nanoseconds.
#pragma once

#include <cstdint>
#include <ctime>

namespace arbrt {

// Current time in nanoseconds: CLOCK_MONOTONIC (through the vDSO). The dispatcher's cheap "is a
// timer due?" checks use the TSC, calibrated against it, and confirm with this clock before waking
// anyone.
uint64_t nowNs();

// Converts an absolute deadline on `clock` (CLOCK_MONOTONIC or CLOCK_REALTIME) to nowNs()'s
// timeline. Returns false for an unsupported clock or a malformed timespec (tv_nsec outside [0,
// 1e9)).
bool deadlineToNs(clockid_t clock, const timespec& deadline, uint64_t* out);

}  // namespace arbrt
