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
//
// The same broadcast carries the other credential state the kernel keeps per thread (capabilities,
// securebits, keep-caps, no_new_privs, ...: credentials.h), which a user thread expects to keep
// wherever it runs next: onEveryKernelThread() publishes one system call, then calls glibc's
// setresuid(-1, -1, -1), which changes nothing but signals every other kernel thread glibc lists;
// our handler, having seen the published call before glibc's handler ran (so before the broadcast
// can end), makes it after glibc's part. The caller makes it last, on its own kernel thread.
#include "process/setxid.h"

#include <errno.h>
#include <grp.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "arbrt/embed/host.h"
#include "arbrt/io.h"
#include "io/raw_syscall.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "signals/kernel_sigaction.h"

namespace arbrun {
namespace {

using Handler = void (*)(int, siginfo_t*, void*);

// glibc's SIGSETXID handler, recorded when ours replaced it (the same function in a fork child).
std::atomic<Handler> gGlibcHandler{nullptr};

// A word lock for kernel threads (raw futex; taken with %fs at the carrier's own TCB, so never by
// a user thread as such). Serialises the set*id calls made through this library and the
// broadcasts of onEveryKernelThread(), which share gExtra. Reset in a fork child (whose other
// threads are gone).
std::atomic<uint32_t> gLock{0};

void lockKernelThread() {
    uint32_t expected = 0;
    // acquire: the previous holder's writes to gExtra happen before ours.
    while (!gLock.compare_exchange_weak(expected, 1, std::memory_order_acquire,
                                        std::memory_order_relaxed)) {
        rawSyscall(SYS_futex, reinterpret_cast<long>(&gLock), FUTEX_WAIT_PRIVATE, expected, 0);
        expected = 0;
    }
}

void unlockKernelThread() {
    gLock.store(0, std::memory_order_release);
    rawSyscall(SYS_futex, reinterpret_cast<long>(&gLock), FUTEX_WAKE_PRIVATE, 1);
}

// The system call onEveryKernelThread() publishes. Written only by the lock holder while
// `active` is false; read by SIGSETXID handlers that saw `active` true. `inflight` counts the
// handlers running (whatever broadcast signalled them): the broadcaster waits for it to reach zero
// after clearing `active`, so no handler reads the call after the broadcast returned.
struct ExtraCall {
    long nr = 0;
    long args[6] = {};
    std::atomic<bool> active{false};
    std::atomic<uint32_t> inflight{0};
    std::atomic<long> firstResult{0};
    std::atomic<bool> haveResult{false};
    std::atomic<bool> differed{false};  // two kernel threads got different results
};
ExtraCall gExtra;

// Records one kernel thread's result of the published call.
void noteResult(long result) {
    bool had = false;
    if (gExtra.haveResult.compare_exchange_strong(had, true, std::memory_order_acq_rel)) {
        gExtra.firstResult.store(result, std::memory_order_release);
        return;
    }
    // The first recorder may not have stored yet: equal results race harmlessly, and a real
    // difference persists whatever the order.
    if (gExtra.firstResult.load(std::memory_order_acquire) != result)
        gExtra.differed.store(true, std::memory_order_relaxed);
}

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

// Whether this signal is glibc's broadcast (the checks glibc's handler makes itself).
bool fromBroadcast(int sig, const siginfo_t* info) {
    return sig == kSigSetxid && info && info->si_code == SI_TKILL &&
           info->si_pid == pid_t(rawSyscall(SYS_getpid));
}

// The kernel's SIGSETXID handler: glibc's, as the kernel thread glibc knows; then the call
// onEveryKernelThread() published, if it was published before glibc's part ran (see the top).
// seq_cst on `inflight` and `active` (both sides): either the broadcaster's wait sees this
// handler, or this handler sees `active` false.
void onSetxidSignal(int sig, siginfo_t* info, void* context) {
    const Handler glibc = gGlibcHandler.load(std::memory_order_acquire);
    if (!glibc) return;
    const int savedErrno = errno;  // the interrupted code's (user or kernel thread TCB)
    gExtra.inflight.fetch_add(1, std::memory_order_seq_cst);
    const bool extra = gExtra.active.load(std::memory_order_seq_cst) && fromBroadcast(sig, info);
    HandlerCall call{glibc, sig, info, context};
    arbrt::runOnKernelThreadTcb(callHandler, &call);
    if (extra) {
        const long* a = gExtra.args;
        noteResult(rawSyscall(gExtra.nr, a[0], a[1], a[2], a[3], a[4], a[5]));
    }
    if (gExtra.inflight.fetch_sub(1, std::memory_order_seq_cst) == 1)
        rawSyscall(SYS_futex, reinterpret_cast<long>(&gExtra.inflight), FUTEX_WAKE_PRIVATE, 1);
    errno = savedErrno;
}

// Waits (kernel thread) until no SIGSETXID handler runs.
void waitForHandlers() {
    for (;;) {
        const uint32_t n = gExtra.inflight.load(std::memory_order_seq_cst);
        if (n == 0) return;
        rawSyscall(SYS_futex, reinterpret_cast<long>(&gExtra.inflight), FUTEX_WAIT_PRIVATE, n, 0);
    }
}

// Runs fn(arg) on the caller's carrier TCB (see the top of the file), bracketed as a blocking
// call, holding gLock. errno inside is the kernel thread's.
void onKernelThreadTcbLocked(void (*fn)(void*), void* arg) {
    struct Frame {
        void (*fn)(void*);
        void* arg;
    } frame{fn, arg};
    arbrt::BlockingCall blocking;  // exits after %fs is back on the user thread's TCB
    arbrt::runOnKernelThreadTcb(
        [](void* raw) {
            auto* f = static_cast<Frame*>(raw);
            lockKernelThread();
            f->fn(f->arg);
            unlockKernelThread();
        },
        &frame);
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
    onKernelThreadTcbLocked(
        [](void* raw) {
            auto* f = static_cast<Frame*>(raw);
            f->result = (*f->call)();
            f->error = errno;
        },
        &frame);
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

void resetSetxidAfterFork() {
    // The child's only thread is the forking one: a lock or broadcast of another thread is gone.
    gLock.store(0, std::memory_order_relaxed);
    gExtra.active.store(false, std::memory_order_relaxed);
    gExtra.inflight.store(0, std::memory_order_relaxed);
}

BroadcastResult onEveryKernelThread(long nr, const long args[6]) {
    auto* noop = ARBRUN_REAL(setresuid);  // resolved on the user thread's own TCB (see above)
    installSetxidHandler();
    struct Frame {
        long nr;
        const long* args;
        decltype(noop) setresuid;
        BroadcastResult result;
    } frame{nr, args, noop, {}};
    onKernelThreadTcbLocked(
        [](void* raw) {
            auto* f = static_cast<Frame*>(raw);
            gExtra.nr = f->nr;
            for (int i = 0; i < 6; i++) gExtra.args[i] = f->args[i];
            gExtra.haveResult.store(false, std::memory_order_relaxed);
            gExtra.differed.store(false, std::memory_order_relaxed);
            gExtra.active.store(true, std::memory_order_seq_cst);
            const int rc = f->setresuid(uid_t(-1), uid_t(-1), uid_t(-1));  // signals the others
            gExtra.active.store(false, std::memory_order_seq_cst);
            waitForHandlers();
            const long* a = f->args;
            const long self = rawSyscall(f->nr, a[0], a[1], a[2], a[3], a[4], a[5]);
            f->result.result = self;
            f->result.others = gExtra.haveResult.load(std::memory_order_acquire);
            f->result.allSame =
                rc == 0 && !gExtra.differed.load(std::memory_order_relaxed) &&
                (!f->result.others || gExtra.firstResult.load(std::memory_order_acquire) == self);
        },
        &frame);
    return frame.result;
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
