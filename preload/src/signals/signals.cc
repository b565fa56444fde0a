// Virtual per-user-thread signals (rules in signals.h): dispositions, the kernel-side wrapper, the
// per-thread and process-wide pending sets, the registry of user threads, and the libc calls. The
// helper thread that hands process-directed signals out is helper.cc; the record of what is
// pending for the process, and the flood control, signal_queue.cc.
#include "signals/signals.h"
#include "arbrt/embed/host.h"
#include "arbrt/embed/resume_point.h"
#include "arbrt/embed/spin_lock.h"
#include "arbrt/embed/threads.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <new>

#include "arbrt/arbrt.h"
#include "arbrt/io.h"
#include "arbrt/sync.h"
#include "io/raw_syscall.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "signals/helper.h"
#include "signals/interrupt.h"
#include "signals/interrupted_at.h"
#include "signals/kernel_sigaction.h"
#include "signals/signal_queue.h"
#include "signals/signal_registry.h"
#include "signals/signalfd.h"
#include "threads/cancel.h"
#include "threads/thread_state.h"

namespace arbrun {
namespace {

using arbrt::embed::SpinLock;

constexpr uint64_t kMinAltStack = 2048;     // MINSIGSTKSZ
constexpr int kAutoDisarm = int(1u << 31);  // SS_AUTODISARM (ignored)

// Signals no mask can hold (the kernel's and glibc's rules).
constexpr uint64_t kUnblockable = bit(SIGKILL) | bit(SIGSTOP) | bit(kSigCancel) | bit(kSigSetxid);

bool validSignal(int sig) {
    return sig >= 1 && sig <= kMaxSignal;
}

uint64_t toMask(const sigset_t* set) {
    uint64_t m;
    std::memcpy(&m, set, sizeof m);  // glibc's sigset_t: signals 1..64 are bits 0..63 of word 0
    return m;
}

void fromMask(uint64_t m, sigset_t* set) {
    std::memset(set, 0, sizeof *set);  // not sigemptyset: no call into libc (see setRealMask)
    std::memcpy(set, &m, sizeof m);
}

SignalThreadState* selfSignals() {
    ShimThreadState* s = selfShimState();
    return s ? &s->signals : nullptr;
}

// --- Dispositions. The program's view of each signal; `wrapped` once the kernel runs our wrapper
// for it. Written under gActionLock (with every real signal blocked on the writer, so a handler
// on the same kernel thread cannot spin on it); read lock-free by handlers.
struct Action {
    std::atomic<void*> handler{nullptr};  // SIG_DFL/SIG_IGN or the program's function
    std::atomic<int> flags{0};
    std::atomic<uint64_t> mask{0};
    std::atomic<bool> wrapped{false};
};
Action gActions[kMaxSignal + 1];
SpinLock gActionLock;

}  // namespace

// Shared with the helper thread (signal_registry.h).
// --- The process-wide pending set and what it records of each signal: signal_queue.h.
// The thread chosen to take each process-pending signal, as the kernel chooses one to wake: only it
// takes the signal at its interruptible points (null: any thread that does not block it). Set
// before the signal's pending bit by whoever records it (the main thread when it wants it) and by
// the helper; left as it is after a take (the next instance sets it again).
std::atomic<SignalThreadState*> gTaker[kMaxSignal + 1];

// --- The registry of live user threads (for choosing who gets a process-directed signal).
SpinLock gRegistryLock;
SignalThreadState* gRegistryHead = nullptr;
// The thread running main() (the first one registered; in a fork child, the forking thread), which
// the kernel prefers for a process-directed signal it does not block: programs rely on it (a main
// thread in pause() that its workers wake with kill(getpid(), ...)). Null once it has ended.
// Written under gRegistryLock; read without it (a snapshot is enough to choose).
std::atomic<SignalThreadState*> gLeader{nullptr};

namespace {

// --- Values queued by pthread_sigqueue to a thread, until it takes the signal.
struct Queued {
    const SignalThreadState* owner;
    int sig;
    sigval value;
};
constexpr int kQueueSlots = 64;
SpinLock gQueueLock;
Queued gQueue[kQueueSlots];

// This library's code and the context-switch code it runs (Boost.Context, when a shared library),
// where an asynchronous handler must not run: written once at start-up (initCodeRanges), before
// any handler that reads them is installed.
struct CodeRange {
    std::atomic<uintptr_t> begin{0}, end{0};
};
CodeRange gCode[2];

struct Segment {
    uintptr_t begin, end;
};

// The executable segment of the loaded object that contains `code` ({0, 0} if none).
Segment textSegmentOf(const void* code) {
    struct Search {
        uintptr_t code, begin, end;
    } search{reinterpret_cast<uintptr_t>(code), 0, 0};
    dl_iterate_phdr(
        [](dl_phdr_info* object, size_t, void* raw) -> int {
            auto* s = static_cast<Search*>(raw);
            for (int i = 0; i < object->dlpi_phnum; ++i) {
                const ElfW(Phdr)& ph = object->dlpi_phdr[i];
                if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
                const uintptr_t begin = object->dlpi_addr + ph.p_vaddr;
                if (s->code < begin || s->code >= begin + ph.p_memsz) continue;
                s->begin = begin;
                s->end = begin + ph.p_memsz;
                return 1;
            }
            return 0;
        },
        &search);
    return Segment{search.begin, search.end};
}

// Release: a handler that reads `end` with acquire sees `begin` too.
void storeRange(CodeRange& to, Segment from) {
    to.begin.store(from.begin, std::memory_order_relaxed);
    to.end.store(from.end, std::memory_order_release);
}

}  // namespace

// Sets the calling kernel thread's real mask to `mask` (old one to *old if given), never blocking
// SIGCANCEL or SIGSETXID, as glibc's pthread_sigmask would. Through the raw system call: a signal
// the kernel delivers on the way back then counts as interrupting this library
// (interruptedInLibrary) and is handed out as usual, where from libc's pthread_sigmask the wrapper
// would see the program's code and run the handler at once, nested in this library's bookkeeping.
void setRealMask(uint64_t mask, uint64_t* old) {
    mask &= ~(bit(kSigCancel) | bit(kSigSetxid));
    rawSyscall(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&mask),
               reinterpret_cast<long>(old), long(sizeof mask));
}

namespace {

// Blocks every real signal on the calling kernel thread for a scope (critical sections that a
// handler on the same thread would deadlock on).
class RealSignalsBlocked {
  public:
    RealSignalsBlocked() { setRealMask(~uint64_t{0}, &saved_); }
    ~RealSignalsBlocked() { setRealMask(saved_, nullptr); }
    RealSignalsBlocked(const RealSignalsBlocked&) = delete;
    RealSignalsBlocked& operator=(const RealSignalsBlocked&) = delete;

  private:
    uint64_t saved_ = 0;
};

bool isFault(int sig) {
    return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGTRAP ||
           sig == SIGSYS;
}

bool ignoredByDefault(int sig) {
    return sig == SIGCHLD || sig == SIGCONT || sig == SIGURG || sig == SIGWINCH;
}

bool onAltStack(const SignalThreadState* me, uintptr_t sp) {
    const auto base = reinterpret_cast<uintptr_t>(me->altBase);
    return me->altBase && sp >= base && sp < base + me->altSize;
}

// Calls fn(arg) with the stack pointer at `top` (the frame keeps CFI through %rbp, so unwinding
// from the handler, for cancellation or a C++ exception, crosses it).
extern "C" void arbrun_call_on_stack(void (*fn)(void*), void* arg, void* top);
asm(".text\n"
    ".p2align 4\n"
    ".type arbrun_call_on_stack,@function\n"
    "arbrun_call_on_stack:\n"
    "  .cfi_startproc\n"
    "  pushq %rbp\n"
    "  .cfi_def_cfa_offset 16\n"
    "  .cfi_offset %rbp, -16\n"
    "  movq %rsp, %rbp\n"
    "  .cfi_def_cfa_register %rbp\n"
    "  movq %rdx, %rsp\n"
    "  andq $-16, %rsp\n"
    "  movq %rdi, %rax\n"
    "  movq %rsi, %rdi\n"
    "  callq *%rax\n"
    "  movq %rbp, %rsp\n"
    "  popq %rbp\n"
    "  .cfi_def_cfa %rsp, 8\n"
    "  ret\n"
    "  .cfi_endproc\n"
    ".size arbrun_call_on_stack, .-arbrun_call_on_stack\n");

struct HandlerCall {
    void* handler;
    int flags;
    int sig;
    siginfo_t* info;
    void* context;
};

void callHandler(void* raw) {
    auto* c = static_cast<HandlerCall*>(raw);
    if (c->flags & SA_SIGINFO) {
        reinterpret_cast<void (*)(int, siginfo_t*, void*)>(c->handler)(c->sig, c->info, c->context);
    } else {
        reinterpret_cast<void (*)(int)>(c->handler)(c->sig);
    }
}

// The default action of a signal no handler takes: nothing for those ignored by default;
// otherwise the real thing (terminate, dump core, stop) on this kernel thread.
void defaultAction(int sig) {
    if (ignoredByDefault(sig)) return;
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ARBRUN_REAL(sigaction)(sig, &dfl, nullptr);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    ARBRUN_REAL(pthread_sigmask)(SIG_UNBLOCK, &one, nullptr);
    rawSyscall(SYS_tgkill, getpid(), rawSyscall(SYS_gettid), sig);
}

void ensureWrapped(int sig, bool helper = true);

// The program's disposition of `sig` is to ignore it (SIG_IGN, or SIG_DFL for a signal ignored by
// default). Until the wrapper is installed for it, the kernel's disposition is the program's own.
bool ignoredNow(int sig) {
    void* handler;
    if (gActions[sig].wrapped.load(std::memory_order_acquire)) {
        handler = gActions[sig].handler.load(std::memory_order_acquire);
    } else {
        struct sigaction current {};
        ARBRUN_REAL(sigaction)(sig, nullptr, &current);
        handler = reinterpret_cast<void*>(current.sa_handler);
    }
    return handler == reinterpret_cast<void*>(SIG_IGN) ||
           (handler == reinterpret_cast<void*>(SIG_DFL) && ignoredByDefault(sig));
}

// Runs the program's disposition for `sig` on the calling thread (`me` null: a kernel thread that
// is not a user thread, for synchronous faults only). `context` may be null (synchronous delivery
// from a pending set): the handler then gets a ucontext with the thread's mask. Returns the
// handler's sa_flags if a handler ran, -1 if not (ignored, or the default action returned).
int runDisposition(SignalThreadState* me, int sig, siginfo_t* info, void* context) {
    Action& a = gActions[sig];
    if (!a.wrapped.load(std::memory_order_acquire)) {
        // Not recorded yet (normal context only: the kernel runs onSignal for wrapped signals):
        // SIG_DFL and SIG_IGN stay the kernel's (SIGCHLD's SIG_IGN means more than ignoring); a
        // handler installed before the runtime started becomes ours now.
        struct sigaction current {};
        ARBRUN_REAL(sigaction)(sig, nullptr, &current);
        if (current.sa_handler == SIG_IGN) return -1;
        if (current.sa_handler == SIG_DFL) {
            defaultAction(sig);
            return -1;
        }
        ensureWrapped(sig);
    }
    void* handler = a.handler.load(std::memory_order_acquire);
    const int flags = a.flags.load(std::memory_order_relaxed);
    if (handler == reinterpret_cast<void*>(SIG_IGN)) return -1;
    if (handler == reinterpret_cast<void*>(SIG_DFL)) {
        defaultAction(sig);
        return -1;
    }
    if (flags & SA_RESETHAND) a.handler.store(reinterpret_cast<void*>(SIG_DFL));
    ucontext_t local;
    const uint64_t old = me ? me->blocked.load(std::memory_order_relaxed) : 0;
    if (!context) {
        std::memset(&local, 0, sizeof local);
        fromMask(old, &local.uc_sigmask);
        context = &local;
    }
    HandlerCall call{handler, flags, sig, info, context};
    if (!me) {
        callHandler(&call);
        return flags;
    }
    uint64_t during = old | a.mask.load(std::memory_order_relaxed);
    if (!(flags & SA_NODEFER)) during |= bit(sig);
    me->blocked.store(during & ~kUnblockable, std::memory_order_seq_cst);
    char here;
    if ((flags & SA_ONSTACK) && me->altBase && !me->altDisabled &&
        !onAltStack(me, reinterpret_cast<uintptr_t>(&here))) {
        arbrun_call_on_stack(callHandler, &call, static_cast<char*>(me->altBase) + me->altSize);
    } else {
        callHandler(&call);
    }
    me->blocked.store(old, std::memory_order_seq_cst);
    return flags;
}

// Whether the interrupted context stands on a `syscall` instruction (0f 05) with a call's number
// in rax: where the kernel leaves a call it restarts (the handler has SA_RESTART), and where a
// signal that lands just before the instruction finds it too.
bool atSyscallInstruction(const void* context) {
    const greg_t* r = static_cast<const ucontext_t*>(context)->uc_mcontext.gregs;
    uint16_t insn;
    std::memcpy(&insn, reinterpret_cast<const void*>(r[REG_RIP]), sizeof insn);
    return insn == 0x050f && r[REG_RAX] >= 0 && r[REG_RAX] <= 1024;
}

// Whether the kernel is restarting the system call the signal interrupted (the wrapper has
// SA_RESTART): back on its `syscall` instruction (atSyscallInstruction), with rcx holding the
// address after that instruction, which the instruction itself wrote when the call began; that
// tells a restart from a signal that landed just before the instruction, which has not written
// rcx yet (a loop whose rcx still holds it from the previous round would be taken for a restart,
// a one-instruction window in such loops only).
bool kernelRestarting(const void* context) {
    const greg_t* r = static_cast<const ucontext_t*>(context)->uc_mcontext.gregs;
    return atSyscallInstruction(context) && r[REG_RCX] == r[REG_RIP] + 2;
}

// Makes the call of `context` the kernel was restarting return EINTR instead, as the kernel does
// for a handler without SA_RESTART.
void failRestartWithEintr(void* context) {
    greg_t* r = static_cast<ucontext_t*>(context)->uc_mcontext.gregs;
    r[REG_RAX] = -EINTR;
    r[REG_RIP] += 2;
}

// Runs the program's handler from the kernel's signal frame (onSignal), recording it for a
// handler that leaves without returning (restoreRealMaskIfLeft). The anchor is a stack address
// below the interrupted code's frames and above the handler's.
void runInKernelContext(SignalThreadState* me, int sig, siginfo_t* info, void* context) {
    char anchor;
    if (me->kernelHandlers++ == 0) {
        me->kernelHandlerSp = reinterpret_cast<uintptr_t>(&anchor);
        std::memcpy(&me->kernelHandlerMask, &static_cast<ucontext_t*>(context)->uc_sigmask,
                    sizeof me->kernelHandlerMask);
    }
    const bool restarting = kernelRestarting(context);
    const int flags = runDisposition(me, sig, info, context);
    if (restarting && flags >= 0 && !(flags & SA_RESTART)) failRestartWithEintr(context);
    --me->kernelHandlers;
}

// A handler run in kernel context left it for good (siglongjmp to `targetSp`, above its frame, or
// pthread_exit: targetSp ~0): the kernel's sigreturn will not restore the carrier's real mask,
// which still blocks every signal. Restore it here.
void restoreRealMaskIfLeft(SignalThreadState* me, uintptr_t targetSp) {
    if (!me || me->kernelHandlers == 0 || targetSp <= me->kernelHandlerSp) return;
    me->kernelHandlers = 0;
    setRealMask(me->kernelHandlerMask, nullptr);
}

}  // namespace

// Whether `t` would take `sig` now: it does not block it, or waits for it in sigwait.
bool wants(const SignalThreadState* t, int sig) {
    return (t->waitingFor.load(std::memory_order_seq_cst) & bit(sig)) ||
           !(t->blocked.load(std::memory_order_seq_cst) & bit(sig));
}

namespace {

// Records a process-directed signal and has it handed to a thread. Async-signal-safe. Before the
// helper exists only SIGSYS is wrapped (catchTrappedSyscalls), for syscall user dispatch, while
// the program has never set its disposition (that starts the helper first): SIG_DFL, or a SIG_IGN
// inherited across exec. A kill of SIGSYS then gets what the kernel would give it. Returns whether
// the signal floods (recordProcessSignal): the receiving kernel thread should hold it.
bool pendProcess(int sig, const siginfo_t* info) {
    if (!helperStarted()) [[unlikely]] {
        if (gActions[sig].handler.load(std::memory_order_acquire) ==
            reinterpret_cast<void*>(SIG_DFL)) {
            defaultAction(sig);
            return false;
        }
        if (ignoredNow(sig)) return false;
    }
    SignalThreadState* leader = gLeader.load(std::memory_order_relaxed);
    if (leader && wants(leader, sig)) {
        leader->chosenAsTaker.store(1, std::memory_order_seq_cst);
        gTaker[sig].store(leader, std::memory_order_release);
    } else {
        gTaker[sig].store(nullptr, std::memory_order_release);
    }
    const bool floods = recordProcessSignal(sig, *info);
    notifySignalfds(sig);
    wakeHelper();
    return floods;
}

// The kernel-side handler of every wrapped signal (all real signals blocked while it runs).
void onSignal(int sig, siginfo_t* info, void* context) {
    if (sig == SIGSYS && arbrt::onSyscallDispatchSignal(info, context)) return;  // no errno use
    const int savedErrno = errno;
    SignalThreadState* me = selfSignals();
    const SignalThreadState* leader = gLeader.load(std::memory_order_relaxed);
    if (isFault(sig) && info->si_code > 0) {
        runDisposition(me, sig, info, context);  // synchronous: on the faulting thread, now
    } else if (me && !(me->blocked.load(std::memory_order_seq_cst) & bit(sig)) &&
               !interruptedInLibrary(context) &&
               (info->si_code == SI_TKILL || !leader || leader == me || !wants(leader, sig))) {
        // Here and now, unless it is process-directed and the main thread wants it (the helper
        // hands it to that thread then).
        runInKernelContext(me, sig, info, context);
    } else if (pendProcess(sig, info) && sig != SIGSYS && (me || onLibraryKernelThread())) {
        // Never on a kernel thread of the program's own, whose real mask is its business; never
        // SIGSYS, which syscall user dispatch raises.
        holdInKernel(sig, context);
    }
    errno = savedErrno;
}

// The wrapper always has SA_RESTART: most of what it does is to record a signal the interrupted
// thread blocks, which natively would not have interrupted its system call at all. Where it runs
// a handler of the program's that has no SA_RESTART, it undoes the kernel's restart itself
// (runInKernelContext).
void installWrapperLocked(int sig) {
    struct sigaction sa {};
    sa.sa_sigaction = onSignal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask);
    // A program's handler may issue a raw system call, which traps: a blocked SIGSYS would be
    // forced through with the default action (syscall_dispatch.h).
    sigdelset(&sa.sa_mask, SIGSYS);
    ARBRUN_REAL(sigaction)(sig, &sa, nullptr);
    gActions[sig].wrapped.store(true, std::memory_order_release);
}

void recordLocked(int sig, const struct sigaction& act) {
    Action& a = gActions[sig];
    a.handler.store(reinterpret_cast<void*>(act.sa_handler), std::memory_order_release);
    a.flags.store(act.sa_flags, std::memory_order_relaxed);
    a.mask.store(toMask(&act.sa_mask) & ~kUnblockable, std::memory_order_relaxed);
}

void initOnce() {
    initCodeRanges();
    startHelperOnce();
}

// Holds real-time `sig` on every kernel thread of the library once its wrapper is in
// (signal_queue.h), and has the helper reopen its window with it. A helper that opened its window
// before the signal was held (a helper that had just started) would otherwise wait with the
// signal blocked, and every instance would stay in the kernel's queue, taken by no thread:
// `signal_latency rt spin` hung at its first round about once in 60 runs, three at a time.
void holdOnceWrapped(int sig) {
    if (holdEverywhere(sig)) wakeHelper();
}

// Makes sure the kernel runs our wrapper for `sig` (which the program blocks or waits for), with
// the disposition it had recorded as the program's. Without `helper` (SIGSYS for syscall user
// dispatch, at start-up) the helper is left for later.
void ensureWrapped(int sig, bool helper) {
    if (!validSignal(sig) || (bit(sig) & kUnblockable)) return;
    if (gActions[sig].wrapped.load(std::memory_order_acquire)) return;
    initCodeRanges();
    if (helper) startHelperOnce();
    {
        RealSignalsBlocked blocked;
        std::lock_guard<SpinLock> lock(gActionLock);
        if (gActions[sig].wrapped.load(std::memory_order_relaxed)) return;
        struct sigaction current {};
        ARBRUN_REAL(sigaction)(sig, nullptr, &current);
        recordLocked(sig, current);
        installWrapperLocked(sig);
    }
    holdOnceWrapped(sig);
}

void ensureWrappedAll(uint64_t set) {
    while (set) {
        const int sig = __builtin_ctzll(set) + 1;
        set &= set - 1;
        ensureWrapped(sig);
    }
}

// Before a look at the process-pending signals in `set` that must see what natively would be
// pending now (a take that does not wait, sigpending, a mask that unblocks): what the kernel
// keeps of held ones comes into the record first (signal_queue.h). While the helper's window is
// open the helper is woken to close it, which is short.
void refillBeforeLook(uint64_t set) {
    // Only where the record has nothing: what it has is older than what the kernel keeps.
    set &= heldSignals() & ~processPendingSignals();
    if (!set) return;
    bool shut = false;
    for (;;) {
        {
            RealSignalsBlocked blocked;  // the record's lock is taken by handlers
            if (refillHeldSignals(set)) break;
        }
        waitForHelperWindowToShut(&shut);
    }
    if (shut) reopenHelperWindow();
}

// Takes pending `sig` for `me`: thread-directed first (with its queued value), else
// process-directed. False if another thread took it first.
bool takeSignal(SignalThreadState* me, int sig, siginfo_t* info) {
    std::memset(info, 0, sizeof *info);
    info->si_signo = sig;
    if (me->pending.fetch_and(~bit(sig), std::memory_order_acq_rel) & bit(sig)) {
        info->si_code = SI_TKILL;
        // Raw, for the reason setRealMask gives.
        info->si_pid = pid_t(rawSyscall(SYS_getpid));
        info->si_uid = uid_t(rawSyscall(SYS_getuid));
        if (me->queued.fetch_and(~bit(sig), std::memory_order_acq_rel) & bit(sig)) {
            std::lock_guard<SpinLock> lock(gQueueLock);
            for (Queued& q : gQueue) {
                if (q.owner == me && q.sig == sig) {
                    info->si_code = SI_QUEUE;
                    info->si_value = q.value;
                    q.owner = nullptr;
                    break;
                }
            }
        }
        return true;
    }
    bool drained = false;
    bool shut = false;
    TakeResult result;
    for (;;) {
        {
            RealSignalsBlocked blocked;  // the record's lock is taken by handlers
            result = takeProcessSignal(sig, info, &drained);
        }
        if (result != TakeResult::helperBusy) break;
        waitForHelperWindowToShut(&shut);
    }
    if (shut) reopenHelperWindow();
    if (result == TakeResult::none) return false;
    // The kernel keeps no more of a flooded signal: this carrier receives it again (unless a
    // handler runs in kernel context here, whose sigreturn restores the mask it interrupted).
    if (drained && me->kernelHandlers == 0) releaseHeldSignal(sig);
    // More instances, or room in a held signal's record: the helper hands out or refills.
    if ((heldSignals() & bit(sig)) || (processPendingSignals() & bit(sig))) wakeHelper();
    return true;
}

// The process-pending signals `me` may take: those chosen for it or for nobody in particular.
uint64_t processPendingFor(const SignalThreadState* me) {
    uint64_t pending = processPendingSignals();
    for (uint64_t bits = pending; bits; bits &= bits - 1) {
        const int sig = __builtin_ctzll(bits) + 1;
        const SignalThreadState* taker = gTaker[sig].load(std::memory_order_acquire);
        if (taker && taker != me) pending &= ~bit(sig);
    }
    return pending;
}

uint64_t pendingFor(const SignalThreadState* me) {
    return me->pending.load(std::memory_order_seq_cst) | processPendingFor(me);
}

// What the sigwait family and signalfd reads of `me` may take: its own pending signals and every
// process-pending one, whichever thread the helper chose to hand it to. Natively any thread's
// sigtimedwait dequeues from the process's queue; the choice only says whom to wake, and a choice
// of a thread that is exiting would otherwise hide the signal from a zero-timeout take until the
// helper chose again.
uint64_t takeablePendingFor(const SignalThreadState* me) {
    return me->pending.load(std::memory_order_seq_cst) | processPendingSignals();
}

// Takes the lowest pending signal in `set` that `me` may take (takeablePendingFor), with its info;
// 0 when there is none. A signal another thread took first is looked for again.
int takePendingIn(SignalThreadState* me, uint64_t set, siginfo_t* info) {
    refillBeforeLook(set);
    for (;;) {
        const uint64_t mine = takeablePendingFor(me) & set;
        if (!mine) return 0;
        const int sig = __builtin_ctzll(mine) + 1;
        if (takeSignal(me, sig, info)) return sig;
    }
}

// Queues `sig` (with `value` if given) on the user thread `target` and wakes it. A signal the
// target does not block and the program ignores is discarded, as the kernel does when it is sent.
int sendToThread(arbrt::ThreadId target, int sig, const sigval* value) {
    ShimThreadState* state = shimStateOf(target);
    if (!state) return ESRCH;
    SignalThreadState* t = &state->signals;
    if (!(t->blocked.load(std::memory_order_seq_cst) & bit(sig)) && ignoredNow(sig)) return 0;
    if (value) {
        std::lock_guard<SpinLock> lock(gQueueLock);
        Queued* slot = nullptr;
        for (Queued& q : gQueue) {
            if (q.owner == t && q.sig == sig) slot = &q;  // not queued twice: replace
        }
        for (Queued& q : gQueue) {
            if (!slot && !q.owner) slot = &q;
        }
        if (!slot) return EAGAIN;
        *slot = Queued{t, sig, *value};
        t->queued.fetch_or(bit(sig), std::memory_order_acq_rel);
    }
    t->pending.fetch_or(bit(sig), std::memory_order_seq_cst);
    notifySignalfds(sig);
    if (target == arbrt::self()) {
        if (signalDeliverable()) {
            bool restartable = true;
            deliverPendingSignals(&restartable);
        }
    } else {
        arbrt::signal(target);  // also wakes a sigwait for it
        // Where it runs now: only if it takes the signal (a blocked one waits for setMask). If
        // it runs, the helper makes sure it gets it (helperLoop).
        if (!(t->blocked.load(std::memory_order_seq_cst) & bit(sig)) &&
            interruptUserThread(target)) {
            startHelperOnce();
            wakeHelper();
        }
    }
    return 0;
}

// A pthread_t that was a user thread's but no longer is (its TCB keeps the fake id): ESRCH
// instead of a real pthread_kill with a tid that is not a kernel thread's.
bool staleUserThread(pthread_t thread) {
    return thread && *reinterpret_cast<const int32_t*>(reinterpret_cast<const char*>(thread) +
                                                       720) >= 0x400000;
}

int checkSignal(int sig) {
    if (sig < 0 || sig > kMaxSignal || sig == kSigCancel || sig == kSigSetxid) return EINVAL;
    return 0;
}

// The sigwait family on a user thread: returns the signal taken, or -EINTR (a handler ran) or
// -EAGAIN (deadline). A cancellation point.
int waitForSignal(uint64_t set, siginfo_t* out, uint64_t deadlineNs) {
    SignalThreadState* me = selfSignals();
    ensureWrappedAll(set);
    siginfo_t info;
    me->waitingFor.store(set, std::memory_order_seq_cst);
    int result = 0;
    for (;;) {
        if (cancelActionable()) {
            me->waitingFor.store(0, std::memory_order_relaxed);
            actOnCancel();
        }
        if (const int sig = takePendingIn(me, set, &info)) {
            result = sig;
            break;
        }
        if (signalDeliverable()) {
            me->waitingFor.store(0, std::memory_order_relaxed);
            bool restartable = true;
            deliverPendingSignals(&restartable);
            return -EINTR;
        }
        if (deadlineNs != arbrt::kNoDeadline && arbrt::nowNs() >= deadlineNs) {
            result = -EAGAIN;
            break;
        }
        if (deadlineNs == arbrt::kNoDeadline) {
            arbrt::block();
        } else {
            arbrt::blockUntil(deadlineNs);
        }
    }
    me->waitingFor.store(0, std::memory_order_relaxed);
    if (result > 0 && out) *out = info;
    return result;
}

// sigsuspend on a user thread: waits with `mask` until a handler ran. A cancellation point.
int suspendWith(uint64_t mask) {
    SignalThreadState* me = selfSignals();
    const uint64_t old = me->blocked.load(std::memory_order_relaxed);
    me->blocked.store(mask & ~kUnblockable, std::memory_order_seq_cst);
    for (;;) {
        if (cancelActionable()) actOnCancel();
        if (signalDeliverable()) {
            bool restartable = true;
            if (deliverPendingSignals(&restartable) > 0) break;
            continue;
        }
        arbrt::block();
    }
    me->blocked.store(old, std::memory_order_seq_cst);
    errno = EINTR;
    return -1;
}

int setMask(int how, const sigset_t* set, sigset_t* old) {
    SignalThreadState* me = selfSignals();
    const uint64_t current = me->blocked.load(std::memory_order_relaxed);
    if (set) {
        const uint64_t m = toMask(set) & ~kUnblockable;
        uint64_t next;
        switch (how) {
            case SIG_BLOCK:
                next = current | m;
                break;
            case SIG_UNBLOCK:
                next = current & ~m;
                break;
            case SIG_SETMASK:
                next = m;
                break;
            default:
                return EINVAL;
        }
        ensureWrappedAll(next & ~current);
        me->blocked.store(next, std::memory_order_seq_cst);  // what it unblocks it takes below
        refillBeforeLook(current & ~next);  // natively delivered before the call returns
    }
    if (old) fromMask(current, old);
    if (signalDeliverable()) {
        bool restartable = true;
        deliverPendingSignals(&restartable);
    }
    return 0;
}

}  // namespace

void initCodeRanges() {
    static std::once_flag once;
    std::call_once(once, [] {
        storeRange(gCode[0], textSegmentOf(reinterpret_cast<void*>(&initCodeRanges)));
        if (void* jump = dlsym(RTLD_DEFAULT, "jump_fcontext")) {
            storeRange(gCode[1], textSegmentOf(jump));
        }
    });
}

bool pcInLibrary(uintptr_t pc) {
    for (const CodeRange& r : gCode) {
        if (pc < r.end.load(std::memory_order_acquire) &&
            pc >= r.begin.load(std::memory_order_relaxed)) {
            return true;
        }
    }
    return false;
}

bool interruptedInLibrary(const void* ucontext) {
    const auto* uc = static_cast<const ucontext_t*>(ucontext);
    const auto entry = reinterpret_cast<uintptr_t>(
        std::atomic_ref(arbrt::arbrtSyscallEntry).load(std::memory_order_relaxed));
    const SignalThreadState* me = selfSignals();
    return interruptedInLibraryAt(
        uintptr_t(uc->uc_mcontext.gregs[REG_RIP]),
        reinterpret_cast<const uintptr_t*>(uc->uc_mcontext.gregs[REG_RSP]), entry,
        me && me->programSyscallFrame != nullptr, pcInLibrary);
}

uint64_t currentSignalMask() {
    if (SignalThreadState* me = selfSignals()) return me->blocked.load(std::memory_order_relaxed);
    sigset_t real;
    ARBRUN_REAL(pthread_sigmask)(SIG_SETMASK, nullptr, &real);
    return toMask(&real) & ~kUnblockable;
}

void signalThreadStart(uint64_t inheritedMask) {
    SignalThreadState* me = selfSignals();
    if (!me) return;
    me->blocked.store(inheritedMask & ~kUnblockable, std::memory_order_relaxed);
    me->self = arbrt::self();
    std::lock_guard<SpinLock> lock(gRegistryLock);
    me->prev = nullptr;
    me->next = gRegistryHead;
    if (gRegistryHead) gRegistryHead->prev = me;
    gRegistryHead = me;
    me->registered = 1;
    static bool first = true;  // guarded by gRegistryLock
    if (first) {
        first = false;
        gLeader.store(me, std::memory_order_relaxed);
    }
}

void signalThreadEnd() {
    SignalThreadState* me = selfSignals();
    if (!me) return;
    restoreRealMaskIfLeft(me, ~uintptr_t{0});  // pthread_exit from a handler in kernel context
    if (!me->registered) return;
    {
        std::lock_guard<SpinLock> lock(gRegistryLock);
        if (me->prev) me->prev->next = me->next;
        if (me->next) me->next->prev = me->prev;
        if (gRegistryHead == me) gRegistryHead = me->next;
        me->registered = 0;
        if (gLeader.load(std::memory_order_relaxed) == me) {
            gLeader.store(nullptr, std::memory_order_relaxed);
        }
    }
    // Signals chosen for it go to another thread. Only a thread that was ever chosen looks (most
    // never are), and each entry is read before the compare-exchange: a failed one still takes
    // the line exclusively, and doing that for all 65 entries (nine lines every thread shares) at
    // each thread exit was a third of a create+join under arbrun. A choice of this thread that
    // races with the exit (the helper stores its pick after leaving gRegistryLock; pendProcess
    // reads gLeader without it) may land after the look, as it could after the exchanges before:
    // the helper, which alerts until the signal is taken, then chooses again among the threads
    // still registered (distribute).
    bool chosen = false;
    if (me->chosenAsTaker.load(std::memory_order_seq_cst)) {
        for (std::atomic<SignalThreadState*>& taker : gTaker) {
            SignalThreadState* expected = me;
            if (taker.load(std::memory_order_acquire) == me) {
                chosen |=
                    taker.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
            }
        }
    }
    if (chosen) wakeHelper();
    if (me->queued.load()) {
        std::lock_guard<SpinLock> lock(gQueueLock);
        for (Queued& q : gQueue) {
            if (q.owner == me) q.owner = nullptr;
        }
    }
}

void markBlockingCall(int delta) {
    if (SignalThreadState* me = selfSignals()) {
        // Compiler barrier: the handler that reads it runs on this kernel thread.
        std::atomic_signal_fence(std::memory_order_seq_cst);
        // A new call starts unrecorded: blockingCall (io_wait.h) never takes the record, so a cut
        // of its call would otherwise be read as one of the next passThrough's.
        if (delta > 0) me->blockingCallCut = 0;
        me->inBlockingCall += delta;
        std::atomic_signal_fence(std::memory_order_seq_cst);
    }
}

ProgramSyscallFrame* markProgramSyscall(ProgramSyscallFrame* frame) {
    SignalThreadState* me = selfSignals();
    if (!me) return nullptr;
    std::atomic_signal_fence(std::memory_order_seq_cst);  // read by handlers on this thread
    ProgramSyscallFrame* outer = me->programSyscallFrame;
    me->programSyscallFrame = frame;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    return outer;
}

void cutBlockingCallShort(void* ucontext) {
    SignalThreadState* me = selfSignals();
    if (!me || !me->inBlockingCall) return;
    // The kernel's restart (SIGCANCEL has SA_RESTART). Calls the kernel does not restart already
    // return EINTR.
    if (!atSyscallInstruction(ucontext)) return;
    failRestartWithEintr(ucontext);
    me->blockingCallCut = 1;
}

bool takeBlockingCallCut() {
    SignalThreadState* me = selfSignals();
    if (!me || !me->blockingCallCut) return false;
    me->blockingCallCut = 0;
    return true;
}

void prepareLongJump(const uint64_t* savedMask, uintptr_t targetSp) {
    SignalThreadState* me = selfSignals();
    if (!me) return;
    restoreRealMaskIfLeft(me, targetSp);
    // Each program call the jump leaves (its frame lies below the target) takes its markers with
    // it, as their destructors never run: its interruptible mark, and the blocking-call bracket
    // of the outermost one that opened it (nested calls run from handlers inside it hold 0).
    uint64_t bracketLeft = 0;
    for (ProgramSyscallFrame* f = me->programSyscallFrame;
         f && targetSp > reinterpret_cast<uintptr_t>(f); f = f->outer) {
        me->programSyscallFrame = f->outer;
        if (me->inBlockingCall) --me->inBlockingCall;
        me->blockingCallCut = 0;
        if (f->bracketToken) bracketLeft = f->bracketToken;
    }
    if (savedMask) me->blocked.store(*savedMask & ~kUnblockable, std::memory_order_seq_cst);
    // Last: closing the bracket may move this thread to another carrier (its core was lent while
    // the call blocked), which needs the carrier's real mask restored first.
    arbrt::exitBlockingCall(bracketLeft);
}

void resetSignalsAfterFork() {
    // Only the forking thread survives: locks a vanished thread held are free again, the registry
    // holds the survivor alone (the others' states belong to stale threads), and nothing is
    // pending (a child starts with an empty pending set).
    new (&gActionLock) SpinLock();
    new (&gQueueLock) SpinLock();
    new (&gRegistryLock) SpinLock();
    gRegistryHead = nullptr;
    resetProcessSignalsAfterFork();
    for (std::atomic<SignalThreadState*>& taker : gTaker) taker.store(nullptr);
    resetHelperAfterFork();
    for (Queued& q : gQueue) q.owner = nullptr;
    if (SignalThreadState* me = selfSignals(); me && me->registered) {
        me->pending.store(0, std::memory_order_relaxed);
        me->queued.store(0, std::memory_order_relaxed);
        me->prev = me->next = nullptr;
        gRegistryHead = me;
    }
    gLeader.store(gRegistryHead, std::memory_order_relaxed);  // the forking thread leads now
}

// Signals siginterrupt() asked signal() not to restart (glibc's _sigintr).
std::atomic<uint64_t> gInterruptingSignals{0};

bool signalRestarts(int sig) {
    return !validSignal(sig) || !(gInterruptingSignals.load(std::memory_order_relaxed) & bit(sig));
}

void setSignalRestarts(int sig, bool restarts) {
    if (!validSignal(sig)) return;
    if (restarts) {
        gInterruptingSignals.fetch_and(~bit(sig), std::memory_order_relaxed);
    } else {
        gInterruptingSignals.fetch_or(bit(sig), std::memory_order_relaxed);
    }
}

bool jumpLeavesAltStack(uintptr_t from, uintptr_t to) {
    const SignalThreadState* me = selfSignals();
    return me && onAltStack(me, from) && !onAltStack(me, to);
}

uint64_t swapRealMaskForExec(uint64_t mask) {
    uint64_t old = 0;
    setRealMask(mask, &old);
    return old;
}

TemporarySignalMask::TemporarySignalMask(const sigset_t* mask) {
    SignalThreadState* me = selfSignals();
    if (!mask || !me) return;
    ensureWrappedAll(toMask(mask));  // as setMask: what it blocks must reach the wrapper
    saved_ = me->blocked.load(std::memory_order_relaxed);
    me->blocked.store(toMask(mask) & ~kUnblockable, std::memory_order_seq_cst);
    active_ = true;
}

TemporarySignalMask::~TemporarySignalMask() {
    if (active_) selfSignals()->blocked.store(saved_, std::memory_order_seq_cst);
}

int takeSignalIn(uint64_t set, siginfo_t* info) {
    SignalThreadState* me = selfSignals();
    return me ? takePendingIn(me, set, info) : 0;
}

bool signalPendingFor(uint64_t set) {
    const SignalThreadState* me = selfSignals();
    if (!me) return false;
    refillBeforeLook(set);
    return (takeablePendingFor(me) & set) != 0;
}

bool signalDeliverable() {
    const SignalThreadState* me = selfSignals();
    return me && (pendingFor(me) & ~me->blocked.load(std::memory_order_seq_cst)) != 0;
}

int deliverPendingSignals(bool* restartable) {
    SignalThreadState* me = selfSignals();
    if (!me) return 0;
    int ran = 0;
    for (;;) {
        const uint64_t ready = pendingFor(me) & ~me->blocked.load(std::memory_order_seq_cst);
        if (!ready) return ran;
        const int sig = __builtin_ctzll(ready) + 1;
        siginfo_t info;
        if (!takeSignal(me, sig, &info)) continue;
        const int flags = runDisposition(me, sig, &info, nullptr);
        if (flags < 0) continue;  // ignored: interrupts nothing
        if (!(flags & SA_RESTART)) *restartable = false;
        ++ran;
    }
}

void catchTrappedSyscalls() {
    ensureWrapped(SIGSYS, /*helper=*/false);
}

void (*libcSignalRestorer())() {
    static void (*restorer)() = [] {
        catchTrappedSyscalls();  // installed through libc's sigaction, which sets its restorer
        KernelSigaction current{};
        kernelSigaction(SIGSYS, nullptr, &current);
        return current.restorer;
    }();
    return restorer;
}

}  // namespace arbrun

using namespace arbrun;

ARBRUN_EXPORT int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
    if (ensureStarted() != Mode::runtime || !validSignal(sig) || (bit(sig) & kUnblockable)) {
        return ARBRUN_REAL(sigaction)(sig, act, old);
    }
    const bool function = act && act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN;
    if (!gActions[sig].wrapped.load(std::memory_order_acquire) && !function) {
        return ARBRUN_REAL(sigaction)(sig, act, old);  // nothing to virtualise (yet)
    }
    initOnce();
    {
        RealSignalsBlocked blocked;
        std::lock_guard<SpinLock> lock(gActionLock);
        Action& a = gActions[sig];
        if (!a.wrapped.load(std::memory_order_relaxed)) {
            struct sigaction current {};
            ARBRUN_REAL(sigaction)(sig, nullptr, &current);
            recordLocked(sig, current);
        }
        if (old) {
            std::memset(old, 0, sizeof *old);
            old->sa_handler = reinterpret_cast<sighandler_t>(a.handler.load());
            old->sa_flags = a.flags.load();
            fromMask(a.mask.load(), &old->sa_mask);
        }
        if (act) {
            recordLocked(sig, *act);
            installWrapperLocked(sig);
        }
    }
    holdOnceWrapped(sig);
    // A system call natively: pending signals are delivered on its way back. A signal that came
    // while every real one was blocked above was deferred to this thread's next such point, and
    // a loop of sigaction calls (stress-ng's) would otherwise never reach one.
    takeSignalsAfterCall();
    return 0;
}

// glibc's signal() calls its internal sigaction: interposed on its own (BSD semantics).
ARBRUN_EXPORT sighandler_t signal(int sig, sighandler_t handler) {
    struct sigaction act {
    }, old{};
    act.sa_handler = handler;
    act.sa_flags = signalRestarts(sig) ? SA_RESTART : 0;
    sigemptyset(&act.sa_mask);
    if (sig >= 1 && sig <= kMaxSignal) sigaddset(&act.sa_mask, sig);
    if (sigaction(sig, &act, &old) != 0) return SIG_ERR;
    return old.sa_handler;
}

ARBRUN_EXPORT sighandler_t bsd_signal(int sig, sighandler_t handler) {
    return signal(sig, handler);
}

ARBRUN_EXPORT int pthread_sigmask(int how, const sigset_t* set, sigset_t* old) {
    if (!onUserThread()) return ARBRUN_REAL(pthread_sigmask)(how, set, old);
    return setMask(how, set, old);
}

ARBRUN_EXPORT int sigprocmask(int how, const sigset_t* set, sigset_t* old) {
    if (!onUserThread()) return ARBRUN_REAL(sigprocmask)(how, set, old);
    if (int err = setMask(how, set, old)) {
        errno = err;
        return -1;
    }
    return 0;
}

ARBRUN_EXPORT int sigpending(sigset_t* set) {
    SignalThreadState* me = selfSignals();
    if (!me) return ARBRUN_REAL(sigpending)(set);
    refillBeforeLook(me->blocked.load());
    fromMask((me->pending.load() | processPendingSignals()) & me->blocked.load(), set);
    return 0;
}

ARBRUN_EXPORT int pthread_kill(pthread_t thread, int sig) {
    const arbrt::ThreadId id = userThread(thread);
    if (!id) {
        if (staleUserThread(thread)) return ESRCH;
        return ARBRUN_REAL(pthread_kill)(thread, sig);
    }
    if (int err = checkSignal(sig)) return err;
    if (sig == 0) return 0;
    return sendToThread(id, sig, nullptr);
}

ARBRUN_EXPORT int pthread_sigqueue(pthread_t thread, int sig, const union sigval value) {
    const arbrt::ThreadId id = userThread(thread);
    if (!id) {
        if (staleUserThread(thread)) return ESRCH;
        return ARBRUN_REAL(pthread_sigqueue)(thread, sig, value);
    }
    if (int err = checkSignal(sig)) return err;
    if (sig == 0) return 0;
    return sendToThread(id, sig, &value);
}

ARBRUN_EXPORT int raise(int sig) {
    if (!onUserThread()) return ARBRUN_REAL(raise)(sig);
    if (int err = pthread_kill(pthread_self(), sig)) {
        errno = err;
        return -1;
    }
    return 0;
}

ARBRUN_EXPORT int sigwait(const sigset_t* set, int* sig) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(sigwait)(set, sig);
    for (;;) {
        const int r = waitForSignal(toMask(set), nullptr, arbrt::kNoDeadline);
        if (r > 0) {
            *sig = r;
            return 0;
        }
    }
}

ARBRUN_EXPORT int sigwaitinfo(const sigset_t* set, siginfo_t* info) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(sigwaitinfo)(set, info);
    const int r = waitForSignal(toMask(set), info, arbrt::kNoDeadline);
    if (r < 0) {
        errno = -r;
        return -1;
    }
    return r;
}

ARBRUN_EXPORT int sigtimedwait(const sigset_t* set, siginfo_t* info, const timespec* timeout) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(sigtimedwait)(set, info, timeout);
    uint64_t deadline = arbrt::kNoDeadline;
    if (timeout) {
        if (timeout->tv_nsec < 0 || timeout->tv_nsec >= 1'000'000'000 || timeout->tv_sec < 0) {
            errno = EINVAL;
            return -1;
        }
        deadline =
            arbrt::nowNs() + uint64_t(timeout->tv_sec) * 1'000'000'000 + uint64_t(timeout->tv_nsec);
    }
    const int r = waitForSignal(toMask(set), info, deadline);
    if (r < 0) {
        errno = -r;
        return -1;
    }
    return r;
}

ARBRUN_EXPORT int sigsuspend(const sigset_t* mask) {
    ARBRT_RESUME_POINT();
    if (!onUserThread()) return ARBRUN_REAL(sigsuspend)(mask);
    return suspendWith(toMask(mask));
}

ARBRUN_EXPORT int pause() {
    ARBRT_RESUME_POINT();
    SignalThreadState* me = selfSignals();
    if (!me) return ARBRUN_REAL(pause)();
    return suspendWith(me->blocked.load(std::memory_order_relaxed));
}

ARBRUN_EXPORT int sigaltstack(const stack_t* ss, stack_t* old) {
    SignalThreadState* me = selfSignals();
    if (!me) return ARBRUN_REAL(sigaltstack)(ss, old);
    char here;
    const bool on = onAltStack(me, reinterpret_cast<uintptr_t>(&here));
    stack_t current{};
    current.ss_sp = me->altBase;
    current.ss_size = me->altSize;
    current.ss_flags = (!me->altBase || me->altDisabled) ? SS_DISABLE : (on ? SS_ONSTACK : 0);
    if (ss) {
        if (on) {
            errno = EPERM;
            return -1;
        }
        const int flags = ss->ss_flags & ~kAutoDisarm;
        if (flags == SS_DISABLE) {
            me->altBase = nullptr;
            me->altSize = 0;
            me->altDisabled = 1;
        } else if (flags != 0 && flags != SS_ONSTACK) {
            errno = EINVAL;
            return -1;
        } else if (ss->ss_size < kMinAltStack) {
            errno = ENOMEM;
            return -1;
        } else {
            me->altBase = ss->ss_sp;
            me->altSize = ss->ss_size;
            me->altDisabled = 0;
        }
    }
    if (old) *old = current;
    return 0;
}
