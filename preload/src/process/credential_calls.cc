// classifyCredentialCall (credential_calls.h): a table of system calls and prctl options.
#include "process/credential_calls.h"

#include <linux/prctl.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>

namespace arbrun {
namespace {

#ifndef SYS_landlock_restrict_self
constexpr long kLandlockRestrictSelf = 446;  // x86-64, Linux 5.13
#else
constexpr long kLandlockRestrictSelf = SYS_landlock_restrict_self;
#endif

// prctl options that set per-thread credential state (the matching PR_GET_* only read it).
CredentialCall classifyPrctl(const long a[6]) {
    switch (a[0]) {
        case PR_SET_KEEPCAPS:
        case PR_SET_SECUREBITS:
        case PR_CAPBSET_DROP:
        case PR_SET_NO_NEW_PRIVS:
            return CredentialCall::everyThread;
        case PR_CAP_AMBIENT:
            return a[1] == PR_CAP_AMBIENT_IS_SET ? CredentialCall::none
                                                 : CredentialCall::everyThread;
        case PR_SET_SECCOMP:
            // Strict mode allows read, write, exit and sigreturn only: on every carrier it would
            // stop the runtime itself, so it stays the caller's own (as the kernel's TSYNC cannot
            // spread it either).
            return a[1] == SECCOMP_MODE_FILTER ? CredentialCall::seccompFilter
                                               : CredentialCall::none;
        default:
            return CredentialCall::none;
    }
}

}  // namespace

CredentialCall classifyCredentialCall(long nr, const long a[6]) {
    switch (nr) {
        case SYS_setuid:
        case SYS_setgid:
        case SYS_setreuid:
        case SYS_setregid:
        case SYS_setresuid:
        case SYS_setresgid:
        case SYS_setgroups:
        case SYS_setfsuid:
        case SYS_setfsgid:
        case SYS_capset:
        case kLandlockRestrictSelf:
            return CredentialCall::everyThread;
        case SYS_prctl:
            return classifyPrctl(a);
        case SYS_seccomp:
            return a[0] == SECCOMP_SET_MODE_FILTER ? CredentialCall::seccompFilter
                                                   : CredentialCall::none;
        default:
            return CredentialCall::none;
    }
}

}  // namespace arbrun
