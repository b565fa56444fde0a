// The exception unwinder this library uses: the system's shared libgcc_s, loaded on first use
// instead of at start-up (unwinder.cc says why).
#pragma once

namespace arbrun {

// Loads libgcc_s and resolves the unwinder entry points this library calls, once; later calls
// return at once. Call it in normal context before anything might unwind through this library
// from a signal handler (pthread_cancel does): its first call takes the dynamic loader's lock.
void loadUnwinder();

}  // namespace arbrun
