// Credential state the kernel keeps per kernel thread, made process-wide for user threads
// (credentials.cc; which calls and why: credential_calls.h).
#pragma once

namespace arbrun {

// If the system call nr(a[0..5]) sets per-thread credential state and the caller is a user thread
// under the runtime, makes it on every kernel thread of the process, stores its result in the
// kernel's convention (-errno on failure) in *result and returns true; otherwise returns false and
// the caller makes the call as it would have. For syscall(), the SIGSYS dispatcher and the libc
// wrappers (capset, prctl, setfsuid, setfsgid).
bool credentialCall(long nr, const long a[6], long* result);

}  // namespace arbrun
