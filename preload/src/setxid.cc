// setuid, setgid, seteuid, setegid, setreuid, setregid, setresuid, setresgid and setgroups under
// the runtime. The kernel keeps credentials per thread; glibc makes them process-wide
// (__nptl_setxid): it flags every thread on its thread list (setting SETXID in the TCB's
// cancelhandling), sends each one SIGSETXID and repeats until every flag is clear, and its
// handler makes the same system call and clears the flag of THREAD_SELF. glibc lists kernel
// threads only (the main thread, carriers, spare carriers, the monitor, the poller); on a carrier
// that runs a user thread, THREAD_SELF is the user thread's TCB, so the handler would clear a flag
// nobody waits for and the broadcast would never end. Two pieces fix this:
// - the kernel's handler for SIGSETXID is ours, wrapping glibc's: it runs glibc's handler with %fs
//   at the interrupted kernel thread's own TCB (arbrt::runOnKernelThreadTcb), restores it, and so
//   clears the flag glibc waits for, on whatever the carrier was doing (computing, blocked in the
//   kernel: glibc's SA_RESTART is kept, switching threads);
// - the public calls run glibc's on the caller's carrier TCB, so that glibc sees the caller as the
//   listed thread it skips instead of signalling its own carrier, bracketed as a blocking call
//   (the broadcast waits for every kernel thread). glibc-internal callers (initgroups) reach the
//   broadcast without this bracket; the handler alone still makes them work.
// Kernel threads (and the native fallback) call glibc directly.
#include "setxid.h"

#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>

#include "arbrt/host.h"
#include "arbrt/io.h"
#include "kernel_sigaction.h"
#include "real_libc.h"
#include "shim.h"

namespace arbrun {
namespace {

using Handler = void (*)(int, siginfo_t*, void*);

// glibc's SIGSETXID handler, recorded when ours replaced it (the same function in a fork child).
std::atomic<Handler> gGlibcHandler{nullptr};

struct HandlerCall {
    Handler handler;
    int sig;
    siginfo_t* info;
    void* context;
};

void callHandler(void* raw) {
    const auto* c = static_cast<const HandlerCall*>(raw);
    c->handler(c->sig, c->info, c->context);
}

// The kernel's SIGSETXID handler: glibc's, as the kernel thread glibc knows.
void onSetxidSignal(int sig, siginfo_t* info, void* context) {
    const Handler glibc = gGlibcHandler.load(std::memory_order_acquire);
    if (!glibc) return;
    HandlerCall call{glibc, sig, info, context};
    arbrt::runOnKernelThreadTcb(callHandler, &call);
}

// A set*id call of glibc on the caller's carrier TCB (see the top of the file). Returns its result
// with errno set from the carrier's errno (where glibc left it) on failure.
template <typename Call>
int onKernelThreadTcb(Call call) {
    struct Frame {
        Call* call;
        int result;
        int error;
    } frame{&call, -1, 0};
    {
        arbrt::BlockingCall blocking;  // exits after %fs is back on the user thread's TCB
        arbrt::runOnKernelThreadTcb(
            [](void* raw) {
                auto* f = static_cast<Frame*>(raw);
                f->result = (*f->call)();
                f->error = errno;
            },
            &frame);
    }
    if (frame.result != 0) errno = frame.error;
    return frame.result;
}

// Resolves the real function first (dlsym may allocate or wait: on the user thread's own TCB),
// then runs it as described above when the caller is a user thread.
#define ARBRUN_SETXID(fn, ...)                                          \
    do {                                                                \
        auto* real = ARBRUN_REAL(fn);                                   \
        if (ensureStarted() != Mode::runtime) return real(__VA_ARGS__); \
        installSetxidHandler();                                         \
        if (!onUserThread()) return real(__VA_ARGS__);                  \
        return onKernelThreadTcb([&] { return real(__VA_ARGS__); });    \
    } while (0)

}  // namespace

void installSetxidHandler() {
    KernelSigaction current{};
    if (kernelSigaction(kSigSetxid, nullptr, &current) != 0) return;
    if (current.handler == onSetxidSignal) return;
    const auto raw = reinterpret_cast<uintptr_t>(current.handler);
    if (raw == uintptr_t(SIG_DFL) || raw == uintptr_t(SIG_IGN) || !(current.flags & SA_SIGINFO)) {
        return;  // not glibc's (it has made no thread yet): nothing to wrap
    }
    gGlibcHandler.store(current.handler, std::memory_order_release);
    KernelSigaction ours = current;  // glibc's flags (SA_RESTART, SA_ONSTACK), mask and restorer
    ours.handler = onSetxidSignal;
    kernelSigaction(kSigSetxid, &ours, nullptr);
}

}  // namespace arbrun

using namespace arbrun;

// The public set*id functions: glibc's, on the carrier's TCB when a user thread calls (see the
// top).
ARBRUN_EXPORT int setuid(uid_t uid) {
    ARBRUN_SETXID(setuid, uid);
}

ARBRUN_EXPORT int setgid(gid_t gid) {
    ARBRUN_SETXID(setgid, gid);
}

ARBRUN_EXPORT int seteuid(uid_t euid) {
    ARBRUN_SETXID(seteuid, euid);
}

ARBRUN_EXPORT int setegid(gid_t egid) {
    ARBRUN_SETXID(setegid, egid);
}

ARBRUN_EXPORT int setreuid(uid_t ruid, uid_t euid) {
    ARBRUN_SETXID(setreuid, ruid, euid);
}

ARBRUN_EXPORT int setregid(gid_t rgid, gid_t egid) {
    ARBRUN_SETXID(setregid, rgid, egid);
}

ARBRUN_EXPORT int setresuid(uid_t ruid, uid_t euid, uid_t suid) {
    ARBRUN_SETXID(setresuid, ruid, euid, suid);
}

ARBRUN_EXPORT int setresgid(gid_t rgid, gid_t egid, gid_t sgid) {
    ARBRUN_SETXID(setresgid, rgid, egid, sgid);
}

ARBRUN_EXPORT int setgroups(size_t size, const gid_t* list) {
    ARBRUN_SETXID(setgroups, size, list);
}
