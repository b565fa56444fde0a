// Per-thread credential state made process-wide (credential_calls.h says which and why): the call
// goes to every kernel thread through glibc's set*id broadcast (setxid.h), or, for a seccomp
// filter, through the kernel's own thread synchronisation. Also the libc wrappers that reach such
// calls without an interposed entry point of their own: capset, setfsuid, setfsgid (prctl is
// interposed in identity.cc).
#include "process/credentials.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "io/raw_syscall.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "process/credential_calls.h"
#include "process/setxid.h"

namespace arbrun {
namespace {

// The kernel's capability header (linux/capability.h's __user_cap_header_struct).
struct CapHeader {
    uint32_t version;
    int pid;
};

// Whether `pid` names this process or one of its kernel threads (0 included): capset's target as a
// program run natively would mean it when it passes its own pid or a tid it read earlier (a user
// thread may have moved to another carrier since).
bool namesThisProcess(int pid) {
    const long self = rawSyscall(SYS_getpid);
    return pid == 0 || pid == self || rawSyscall(SYS_tgkill, self, pid, 0) == 0;
}

// Says once per kind of call that the process's kernel threads did not all get the same result.
void reportDivergence(long nr) {
    static std::atomic<bool> said{false};
    if (said.exchange(true, std::memory_order_relaxed)) return;
    logWarning(
        "system call %ld changed the credentials of the process's kernel threads unequally; "
        "threads may now differ in privileges",
        nr);
}

// Every kernel thread, the caller's last.
long everyThread(long nr, const long a[6]) {
    long args[6] = {a[0], a[1], a[2], a[3], a[4], a[5]};
    CapHeader header{};
    auto* user = reinterpret_cast<CapHeader*>(a[0]);
    if (nr == SYS_capset && user) {
        header = *user;
        if (!namesThisProcess(header.pid)) return rawSyscall(nr, a[0], a[1]);  // EPERM natively
        header.pid = 0;  // each kernel thread sets its own
        args[0] = reinterpret_cast<long>(&header);
    }
    const BroadcastResult r = onEveryKernelThread(nr, args);
    if (nr == SYS_capset && user) user->version = header.version;  // the kernel's preferred one
    if (!r.allSame) reportDivergence(nr);
    return r.result;
}

// A seccomp filter (seccomp(SECCOMP_SET_MODE_FILTER) or prctl(PR_SET_SECCOMP)): installed with
// TSYNC, which gives every thread the caller's filter at once; TSYNC_ESRCH makes a failure to
// synchronise -ESRCH instead of a thread id and allows a listener. A kernel without TSYNC_ESRCH
// (before 5.7) gets the filter on every thread one by one, or on the caller only when it has a
// listener (there is one listener per filter).
long seccompFilter(long nr, const long a[6]) {
    const unsigned long flags = nr == SYS_prctl ? 0 : static_cast<unsigned long>(a[1]);
    const long prog = a[2];
    if (flags & SECCOMP_FILTER_FLAG_TSYNC) return rawSyscall(SYS_seccomp, a[0], a[1], prog);
    const long synced =
        rawSyscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                   long(flags | SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_TSYNC_ESRCH), prog);
    if (synced != -EINVAL && synced != -ESRCH) return synced;
    if (flags & SECCOMP_FILTER_FLAG_NEW_LISTENER) {
        logWarning("seccomp filter with a listener applies to one kernel thread only");
        return rawSyscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, long(flags), prog);
    }
    const long args[6] = {SECCOMP_SET_MODE_FILTER, long(flags), prog, 0, 0, 0};
    return everyThread(SYS_seccomp, args);
}

// A libc-style result (-1 and errno) from the kernel's convention.
long libcResult(long r) {
    if (r < 0 && r > -4096) {
        errno = int(-r);
        return -1;
    }
    return r;
}

}  // namespace

bool credentialCall(long nr, const long a[6], long* result) {
    const CredentialCall kind = classifyCredentialCall(nr, a);
    if (kind == CredentialCall::none) return false;
    if (ensureStarted() != Mode::runtime || !onUserThread()) return false;
    *result = kind == CredentialCall::seccompFilter ? seccompFilter(nr, a) : everyThread(nr, a);
    return true;
}

}  // namespace arbrun

using namespace arbrun;

// glibc's capset is the bare system call (its header is libcap's, hence the untyped pointers).
extern "C" int capset(void* header, void* data);
ARBRUN_EXPORT int capset(void* header, void* data) {
    const long a[6] = {reinterpret_cast<long>(header), reinterpret_cast<long>(data), 0, 0, 0, 0};
    long r;
    if (credentialCall(SYS_capset, a, &r)) return int(libcResult(r));
    return ARBRUN_REAL(capset)(header, data);
}

// setfsuid and setfsgid return the previous id, never an error (the kernel's convention is theirs).
ARBRUN_EXPORT int setfsuid(uid_t fsuid) {
    const long a[6] = {long(fsuid), 0, 0, 0, 0, 0};
    long r;
    if (credentialCall(SYS_setfsuid, a, &r)) return int(r);
    return ARBRUN_REAL(setfsuid)(fsuid);
}

ARBRUN_EXPORT int setfsgid(gid_t fsgid) {
    const long a[6] = {long(fsgid), 0, 0, 0, 0, 0};
    long r;
    if (credentialCall(SYS_setfsgid, a, &r)) return int(r);
    return ARBRUN_REAL(setfsgid)(fsgid);
}
