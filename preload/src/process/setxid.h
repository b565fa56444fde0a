// The set*id family under the runtime (setxid.cc): process-wide credentials as POSIX wants them,
// and the broadcast that makes other per-thread credential state process-wide (credentials.h).
#pragma once

namespace arbrun {

// Puts this library's SIGSETXID handler in front of glibc's (which glibc installs when the process
// makes its first thread). Idempotent and cheap to repeat; call once the runtime's kernel threads
// exist, again in a fork child (the child's first pthread_create may reinstall glibc's), and before
// each set*id call.
void installSetxidHandler();

// In a fork child, before its runtime exists: forgets the parent's broadcast state (its other
// threads are gone). Then, once the runtime runs, installSetxidHandler().
void resetSetxidAfterFork();

// What onEveryKernelThread() saw.
struct BroadcastResult {
    long result = 0;      // the caller's own result, in the kernel's convention (-errno)
    bool others = false;  // at least one other kernel thread made the call
    bool allSame = true;  // every kernel thread got `result` (and the broadcast itself worked)
};

// Makes the system call nr(args[0..5]) on every kernel thread glibc lists (carriers, spares, the
// monitor, helper threads), the caller's own kernel thread last, piggybacking on glibc's set*id
// broadcast. For calls that change state the kernel keeps per thread and a user thread must keep
// wherever it runs next. Call on a user thread, in runtime mode; blocks it as a blocking call.
// Arguments that are pointers must stay valid and unchanged until it returns.
BroadcastResult onEveryKernelThread(long nr, const long args[6]);

}  // namespace arbrun
