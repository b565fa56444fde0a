// Thread-exit destructors for user threads (glibc's start_thread runs them for kernel threads).
#pragma once

namespace arbrun {

// Runs, on the exiting user thread and in glibc's order, its thread_local destructors
// (__call_tls_dtors; a later call finds nothing left to run) and then the destructors of its
// pthread keys (up to PTHREAD_DESTRUCTOR_ITERATIONS rounds, only for non-NULL values of keys that
// still exist), and leaves its key storage empty for the next occupant of the TCB. Call it where
// a pthread-created thread ends, after the start routine returned or pthread_exit unwound.
void runKeyDestructors();

}  // namespace arbrun
