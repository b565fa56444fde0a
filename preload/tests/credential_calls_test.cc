// classifyCredentialCall: which calls go to every kernel thread, which to the kernel's seccomp
// synchronisation, and which (reads, unrelated calls) are made as they are.
#include "process/credential_calls.h"

#include <gtest/gtest.h>
#include <linux/prctl.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>

namespace arbrun {
namespace {

CredentialCall classify(long nr, long a0 = 0, long a1 = 0) {
    const long a[6] = {a0, a1, 0, 0, 0, 0};
    return classifyCredentialCall(nr, a);
}

TEST(ClassifyCredentialCall, IdChangesGoToEveryThread) {
    for (long nr : {SYS_setuid, SYS_setgid, SYS_setreuid, SYS_setregid, SYS_setresuid,
                    SYS_setresgid, SYS_setgroups, SYS_setfsuid, SYS_setfsgid, SYS_capset})
        EXPECT_EQ(classify(nr), CredentialCall::everyThread) << nr;
}

TEST(ClassifyCredentialCall, ReadsAndUnrelatedCallsAreMadeAsTheyAre) {
    for (long nr : {SYS_getuid, SYS_getresuid, SYS_getgroups, SYS_capget, SYS_futex, SYS_read})
        EXPECT_EQ(classify(nr), CredentialCall::none) << nr;
}

TEST(ClassifyCredentialCall, PrctlSettersOfCredentialStateGoToEveryThread) {
    for (long option : {PR_SET_KEEPCAPS, PR_SET_SECUREBITS, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS})
        EXPECT_EQ(classify(SYS_prctl, option), CredentialCall::everyThread) << option;
    for (long op : {PR_CAP_AMBIENT_RAISE, PR_CAP_AMBIENT_LOWER, PR_CAP_AMBIENT_CLEAR_ALL})
        EXPECT_EQ(classify(SYS_prctl, PR_CAP_AMBIENT, op), CredentialCall::everyThread) << op;
}

TEST(ClassifyCredentialCall, PrctlReadsAndOtherOptionsAreMadeAsTheyAre) {
    EXPECT_EQ(classify(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET), CredentialCall::none);
    for (long option : {PR_GET_KEEPCAPS, PR_GET_SECUREBITS, PR_CAPBSET_READ, PR_GET_NO_NEW_PRIVS,
                        PR_SET_NAME, PR_SET_PDEATHSIG, PR_SET_DUMPABLE})
        EXPECT_EQ(classify(SYS_prctl, option), CredentialCall::none) << option;
}

TEST(ClassifyCredentialCall, SeccompFiltersAreSynchronisedStrictModeIsNot) {
    EXPECT_EQ(classify(SYS_seccomp, SECCOMP_SET_MODE_FILTER), CredentialCall::seccompFilter);
    EXPECT_EQ(classify(SYS_prctl, PR_SET_SECCOMP, SECCOMP_MODE_FILTER),
              CredentialCall::seccompFilter);
    EXPECT_EQ(classify(SYS_seccomp, SECCOMP_SET_MODE_STRICT), CredentialCall::none);
    EXPECT_EQ(classify(SYS_prctl, PR_SET_SECCOMP, SECCOMP_MODE_STRICT), CredentialCall::none);
    EXPECT_EQ(classify(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL), CredentialCall::none);
}

TEST(ClassifyCredentialCall, LandlockRestrictSelfGoesToEveryThread) {
    EXPECT_EQ(classify(446), CredentialCall::everyThread);  // landlock_restrict_self, x86-64
}

}  // namespace
}  // namespace arbrun
