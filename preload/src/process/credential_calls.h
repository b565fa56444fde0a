// Which system calls change credential state that the kernel keeps per kernel thread (pure logic,
// credential_calls.cc; used by credentials.cc).
//
// Natively such state belongs to the calling thread, which for a single-threaded program (a daemon
// dropping privileges, setpriv, su) is the process. Under the runtime a user thread runs on
// whichever carrier its core has, and its next system call, exec or file access is made by that
// carrier: state left on one carrier would come and go as the thread moves. So a call from a user
// thread that sets it is made on every kernel thread of the process (the price: two threads of a
// program can no longer hold different capabilities).
#pragma once

namespace arbrun {

enum class CredentialCall {
    none,           // not credential state, or only read: made as it is
    everyThread,    // made on every kernel thread (setxid.h, onEveryKernelThread)
    seccompFilter,  // a seccomp filter: synchronised to every thread by the kernel (TSYNC)
};

// Classifies the system call nr(a[0..5]) (x86-64 numbers; prctl by its option). Covered: the
// set*id family and setgroups (for raw calls; glibc's wrappers broadcast themselves), setfsuid,
// setfsgid, capset, prctl PR_SET_KEEPCAPS, PR_SET_SECUREBITS, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS,
// PR_CAP_AMBIENT (raise, lower, clear), PR_SET_SECCOMP and seccomp with a filter, and
// landlock_restrict_self.
CredentialCall classifyCredentialCall(long nr, const long a[6]);

}  // namespace arbrun
