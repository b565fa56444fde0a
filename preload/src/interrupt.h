// Interruption of blocking calls by signals and cancellation: the contract between the waits
// (sleeps, readiness waits, sigsuspend, ...) and the signal/cancellation machinery.
#pragma once

namespace arbrun {

// True when the calling user thread has a signal it should take now (pending and not masked) or an
// actionable cancellation request. Interruptible waits check it each time they wake up; whoever
// makes it true wakes the thread (arbrt::signal for block()/blockUntil(), the parking lot for
// parked ones).
bool interruptPending();

// Acts on what interruptPending() reported: cancellation (does not return) and pending signals
// (runs their handlers on this thread). Returns true when the interrupted call must fail with
// EINTR (a handler ran without SA_RESTART, or POSIX never restarts that call).
bool deliverInterrupts();

}  // namespace arbrun
