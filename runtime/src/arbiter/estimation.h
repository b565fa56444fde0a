// Core estimation in arbiter mode (estimation.cc): the monitor samples every core's counters for
// the embedder's core estimator (RuntimeOptions::estimator, a replaceable policy object from
// runtime/policy); the estimate is the shared pool's demand in the request to the arbiter
// (core_request.h), which the request sender resends when it changes.
#pragma once

#include <cstdint>

namespace arbrt::detail {

// Start-up (arbiter mode with an estimator; before the monitor starts): the sampler's state.
void startEstimation();
// Stop (after the monitor and the request sender are joined): frees the sampler's state, so a
// later runtime (started again, or without an estimator) never reads this one's estimate.
void stopEstimation();
// Monitor: takes a sample when one is due, feeds the estimator, and sends a new request when the
// wanted count changed. Returns the nanoseconds until the next sample is due (~0: never).
uint64_t estimationTick();
// Monitor: whether, at the last sample, the estimator had nothing to decide until some core does
// something: no thread waited anywhere, and it wanted the fewest cores it may and had no more
// granted. Only growth could follow, and only after a thread waits, which wakes a deep-sleeping
// monitor (a carrier waking, a call returning); so the monitor may sleep deep past the next
// sample (blocking.cc). True without an estimator.
bool estimationWaitsForActivity();
// The cores the estimator wants now (the pool's demand), or 0 without an estimator.
uint32_t estimatedCores();

}  // namespace arbrt::detail
