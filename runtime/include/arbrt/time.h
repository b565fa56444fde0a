// Time: a calibrated TSC clock for the hot path, convertible to CLOCK_MONOTONIC nanoseconds.
#pragma once

#include <cstdint>
#include <ctime>

namespace arbrt {

// Current time in nanoseconds on the runtime's clock (CLOCK_MONOTONIC's epoch, TSC resolution).
// Valid after start(); before that it reads CLOCK_MONOTONIC directly.
uint64_t nowNs();

// Converts an absolute deadline on `clock` (CLOCK_MONOTONIC or CLOCK_REALTIME) to nowNs()'s
// timeline. Returns false for an unsupported clock or a malformed timespec (tv_nsec outside [0,
// 1e9)).
bool deadlineToNs(clockid_t clock, const timespec& deadline, uint64_t* out);

}  // namespace arbrt
