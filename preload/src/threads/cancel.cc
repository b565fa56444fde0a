// pthread_cancel and pthread_testcancel for user threads (see cancel.h for the design).
#include "threads/cancel.h"

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "arbrt/arbrt.h"
#include "arbrt/embed/threads.h"
#include "io/raw_syscall.h"
#include "libc/pthread_fields.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "libc/unwinder.h"
#include "signals/interrupt.h"
#include "signals/kernel_sigaction.h"
#include "signals/signal_queue.h"
#include "signals/signals.h"

namespace arbrun {
namespace {

// The bits of struct pthread's cancelhandling (pthread_fields.h): state disabled, type
// asynchronous, canceling, canceled, exiting, terminated.
// The value a retried asynchronous cancellation's SIGCANCEL carries (SI_QUEUE), which the handler
// acts on only at a safe point (retryAsyncCancel).
constexpr int kAsyncCancelRetry = 0x61726263;
constexpr int kDisabled = 1, kAsync = 2, kCanceling = 4, kCanceled = 8, kExiting = 0x10,
              kTerminated = 0x20;

std::atomic<int>& cancelWord(void* tcb) {
    return pthread_field::at<std::atomic<int>>(tcb, pthread_field::kCancelHandling);
}

// What glibc's pthread_testcancel compares: requested, enabled, not exiting or terminated.
bool actionable(int word) {
    return (word & (kDisabled | kCanceled | kExiting | kTerminated)) == kCanceled;
}

// Acts on the cancellation from inside the SIGCANCEL handler, which then never returns: the
// kernel blocked SIGCANCEL on this carrier for the handler and only its sigreturn would unblock
// it, so it is unblocked first (raw: the carrier's real mask), or the carrier would never again
// be preempted or interrupted.
[[noreturn]] void unwindFromHandler() {
    const uint64_t cancel = uint64_t{1} << (kSigCancel - 1);
    rawSyscall(SYS_rt_sigprocmask, SIG_UNBLOCK, reinterpret_cast<long>(&cancel), 0, sizeof cancel);
    actOnCancel();
}

// SIGCANCEL on a carrier: the runtime's preemption requests, and interruptions of the user thread
// running there (interruptUserThread). It unwinds that thread if (and only if) it is cancelled
// with asynchronous cancellation enabled, as glibc's sigcancel_handler does for native threads,
// and sends it through the runtime's resume hook when it has signals to take; never when
// interrupted inside this library (its locks may be held): the thread acts at its next
// cancellation point or interruptible wait instead.
void onCancelSignal(int, siginfo_t* info, void* context) {
    // Raw: a pc in libc's getpid would let a pending signal run its handler nested in here.
    if (info->si_pid != pid_t(rawSyscall(SYS_getpid))) return;
    if (info->si_code == SI_QUEUE && info->si_value.sival_int == kHoldRefresh) {
        adoptHeldSignals(context);  // any library kernel thread, user thread or not
        return;
    }
    const bool retry = info->si_code == SI_QUEUE && info->si_value.sival_int == kAsyncCancelRetry;
    if (info->si_code != SI_TKILL && !retry) return;
    arbrt::embed::interruptTaken();  // before reading the state the senders published
    const bool preemption = arbrt::onPreemptSignal(context);  // the runtime's monitor sent it
    if (!onUserThread()) return;
    if (interruptedInLibrary(context)) return;
    if (asyncCancelActionable()) {
        // A retry goes through the resume hook, which acts on it, and only from a safe point
        // (refused elsewhere: the helper retries a millisecond later).
        if (retry) {
            arbrt::interruptAtSafePoint(context);
            return;
        }
        if (!preemption) unwindFromHandler();
    }
    // Signals run in normal context: at a safe point (outside libc and the runtime), where a
    // thread preempted just now runs the hook anyway when it resumes; or after a blocking system
    // call that they cut short.
    if (signalDeliverable() && !arbrt::interruptAtSafePoint(context)) {
        cutBlockingCallShort(context);
    }
}

// Installed at start-up (the runtime's preemption requests arrive on SIGCANCEL too: a signal the
// program can never use) and again, harmlessly, at the first asynchronous cancellation. Without
// SA_NODEFER: SIGCANCEL is a real-time signal, every interruption queues one more, and while a
// carrier cannot run (descheduled by the host, or its thread in a program handler that blocks
// every signal) dozens may queue; taken nested, each frame (with the FP state) on top of the last,
// they overflowed a small user stack (signal_cond_storm's 128 KiB waiters). Blocked while the
// handler runs, they are taken one after another. The one path that leaves the handler without
// its sigreturn (actOnCancel, unwinding) unblocks it first (unwindFromHandler).
void installCancelHandler() {
    static std::once_flag once;
    std::call_once(once, [] {
        KernelSigaction sa{onCancelSignal, SA_SIGINFO | SA_RESTART | kSaRestorer,
                           libcSignalRestorer(), 0};
        kernelSigaction(kSigCancel, &sa, nullptr);
    });
}

}  // namespace

bool interruptUserThread(arbrt::ThreadId target) {
    installCancelHandler();
    return arbrt::embed::interruptCarrierOf(target, kSigCancel);
}

bool retryAsyncCancel(arbrt::ThreadId target) {
    const int tid = arbrt::kernelTidOf(target);
    if (!tid) return false;
    siginfo_t info{};
    info.si_signo = kSigCancel;
    info.si_code = SI_QUEUE;
    info.si_pid = getpid();
    info.si_uid = getuid();
    info.si_value.sival_int = kAsyncCancelRetry;
    rawSyscall(SYS_rt_tgsigqueueinfo, getpid(), tid, kSigCancel, reinterpret_cast<long>(&info));
    return true;
}

// A preempted thread resumes here (runtime's resume hook) before its interrupted instruction: what
// a native thread would have had interrupt it there happens now. An asynchronous cancellation whose
// SIGCANCEL found it off its carrier unwinds it (through the runtime's trampoline, which has
// unwind information); pending signals it does not block run their handlers.
// The fence pairs with pthread_cancel's: the carrier that resumed this thread published it as its
// `current` (kernelTidOf reads that) before it comes here, so either this load sees the request or
// the canceller's look sees the thread running and interrupts it (and the helper, again).
static void onPreemptedThreadResumes() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    actOnAsynchronousEvents();
}

int installCarrierSignalHandler() {
    initCodeRanges();  // read by the handler
    installCancelHandler();
    arbrt::setPreemptResumeHook(onPreemptedThreadResumes);
    return kSigCancel;
}

bool cancelActionable() {
    return actionable(cancelWord(selfTcb()).load(std::memory_order_acquire));
}

bool asyncCancelOutstanding(arbrt::ThreadId thread) {
    if (!thread.context) return false;
    const int word =
        cancelWord(arbrt::embed::tcbOf(thread.context)).load(std::memory_order_acquire);
    return actionable(word) && (word & kAsync);
}

bool asyncCancelActionable() {
    const int word = cancelWord(selfTcb()).load(std::memory_order_acquire);
    return actionable(word) && (word & kAsync);
}

void actOnCancel() {
    pthread_exit(PTHREAD_CANCELED);  // glibc's: stores the result and unwinds
}

}  // namespace arbrun

using namespace arbrun;

ARBRUN_EXPORT int pthread_cancel(pthread_t thread) {
    const arbrt::ThreadId id = userThread(thread);
    if (!id) return ARBRUN_REAL(pthread_cancel)(thread);
    // The target may act on it in a signal handler (asynchronous mode), unwinding through this
    // library's frames: the unwinder must be loaded before, here in normal context (as glibc's
    // own pthread_cancel loads it).
    loadUnwinder();
    std::atomic<int>& word = cancelWord(reinterpret_cast<void*>(thread));
    int old = word.load(std::memory_order_relaxed);
    int now;
    do {
        now = old | kCanceling | kCanceled;
        if (now == old) return 0;  // already cancelled
    } while (!word.compare_exchange_weak(old, now, std::memory_order_acq_rel));
    if (now & kDisabled) return 0;  // acted on when re-enabled
    if (id == arbrt::self()) {
        if (now & kAsync) actOnCancel();
        return 0;
    }
    // Asynchronous mode (also set by glibc around the system call of its own cancellation
    // points): interrupt it where it runs, and have the helper interrupt it again until it acts
    // (a SIGCANCEL that lands inside this library is refused). The fence pairs with the resume
    // hook's (onPreemptedThreadResumes). Either way wake it if it waits in one of ours.
    if (now & kAsync) {
        std::atomic_thread_fence(std::memory_order_seq_cst);
        interruptUserThread(id);
        watchAsyncCancel();
    }
    arbrt::signal(id);
    return 0;
}

// Also a scheduling point: programs spin on it (`for (;;) pthread_testcancel();`) waiting to be
// cancelled, so it lets this core's other runnable threads and due timers run (the canceller may
// be one of them); arbrt::yield() returns at once when there are none.
ARBRUN_EXPORT void pthread_testcancel() {
    if (!onUserThread()) return ARBRUN_REAL(pthread_testcancel)();
    if (cancelActionable()) actOnCancel();
    if (signalDeliverable()) {
        bool restartable = true;
        deliverPendingSignals(&restartable);
    }
    arbrt::yield();
}
