// Virtual per-user-thread signals: the parts other files of the preload library call.
//
// Rules (documented once here):
// - Dispositions: sigaction()/signal() record the program's handler in a table and install one
//   wrapper in the kernel for every signal the program handles, blocks or waits for (never for
//   SIGKILL/SIGSTOP, or glibc's internal SIGCANCEL/SIGSETXID). Carriers and other kernel threads
//   keep their real masks as they are (nothing the program handles is blocked there), so the kernel
//   may deliver a process-directed signal to any of them; the wrapper then decides. The exception
//   is flood control (signal_queue.h): real-time signals, and a standard one that arrives again
//   while pending, are held in the kernel's queue, blocked on the library's kernel threads, and
//   taken from it one kernel thread at a time, so that they queue in order as natively.
// - Masks are virtual (SignalThreadState::blocked). The wrapper runs the program's handler right
//   away on the interrupted user thread when that thread does not block the signal, was not
//   interrupted inside this library or the context switch (interruptedInLibrary: its own text and
//   its raw system calls; where it sets masks or asks for ids on a user thread it uses raw calls,
//   not libc's, whose pc would count as the program's), and the signal is not a
//   process-directed one the main thread wants; otherwise the signal becomes process-pending and
//   one thread is chosen to take it (gTaker; only it runs its handler for it, while the sigwait
//   family and signalfd reads of any thread may take it, as natively): the main thread if it
//   wants it (as the kernel chooses), else a sigwait-er for it, else another user thread that
//   does not block it. The chosen thread is alerted (alertThread: woken from an interruptible wait,
//   interrupted where it runs), and alerted again until it takes the signal (the helper thread's
//   loop). Pending signals are taken at interruptible points: waits (interrupt.h), sleeps, sigmask
//   changes, sched_yield, syscall() returns, pthread_testcancel, a safe point of a running thread.
// - A signal the program ignores, sent to a thread that does not block it, is discarded when sent
//   (the kernel's rule); until a signal is wrapped, the kernel's disposition is the program's.
// - pthread_kill/pthread_sigqueue to a user thread: pending on that thread, which is woken; to the
//   caller itself: delivered before returning when not blocked. raise() is pthread_kill(self).
// - Synchronous faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS raised by the kernel) run
//   the handler at once on the faulting thread.
// - A handler runs with the thread's virtual mask extended by sa_mask (and the signal itself unless
//   SA_NODEFER), on the thread's alternate stack when SA_ONSTACK is set and one is configured.
// - A handler may leave by siglongjmp (setjmp.cc restores the virtual mask a sigsetjmp(env, 1)
//   saved) or pthread_exit; one that ran in kernel context then has the carrier's real mask
//   restored too.
#pragma once

#include <signal.h>

#include <cstdint>

namespace arbrun {

struct ProgramSyscallFrame;  // interrupt.h

// The calling thread's virtual mask (a kernel thread's real one), for inheritance at creation.
uint64_t currentSignalMask();
// Called on a new pthread user thread before its start routine (mask inherited from its creator)
// and when it ends (after key destructors).
void signalThreadStart(uint64_t inheritedMask);
void signalThreadEnd();

// Delivers the caller's deliverable pending signals (runs handlers). Returns how many handlers ran;
// *restartable is cleared when one of them had no SA_RESTART.
int deliverPendingSignals(bool* restartable);
// True when the calling user thread has a pending signal it does not block.
bool signalDeliverable();

// Start-up, before the runtime's carriers turn syscall user dispatch on: installs the wrapper for
// SIGSYS, which passes the runtime's trapped system calls to it (arbrt::onSyscallDispatchSignal)
// and any other SIGSYS to the program's disposition.
void catchTrappedSyscalls();

// glibc's signal-return trampoline (__restore_rt: the bytes libgcc's unwinder recognises, inside
// libc's text, so syscall user dispatch lets its rt_sigreturn through), for handlers installed
// with the raw rt_sigaction. Read back from the SIGSYS wrapper libc installed.
void (*libcSignalRestorer())();

// Whether signal() installs a handler of `sig` with SA_RESTART (true unless siginterrupt(sig, 1)
// said otherwise), and siginterrupt's record of it (legacy.cc).
bool signalRestarts(int sig);
void setSignalRestarts(int sig, bool restarts);

// For __longjmp_chk on a user thread (setjmp.cc): whether a jump from stack pointer `from` to `to`
// leaves the thread's (virtual) alternate signal stack, which makes a jump to a deeper address
// legitimate.
bool jumpLeavesAltStack(uintptr_t from, uintptr_t to);

// For exec on a user thread (exec.cc): makes the calling carrier's real mask `mask` (never blocking
// SIGCANCEL or SIGSETXID) and returns the one it replaces, for the call that gives it back.
uint64_t swapRealMaskForExec(uint64_t mask);

// For the waits that take a signal mask for their duration (ppoll, pselect, epoll_pwait,
// epoll_pwait2): while it lives, `mask` (null: none, nothing changes) is the calling user thread's
// virtual mask, as the kernel swaps the thread's mask in for the call. A signal it unblocks then
// interrupts the wait and its handler runs with it in force; the thread's own mask comes back at
// the end, so a signal it blocks again stays pending. On a kernel thread it does nothing: the real
// call takes the mask itself.
class TemporarySignalMask {
  public:
    explicit TemporarySignalMask(const sigset_t* mask);
    ~TemporarySignalMask();
    TemporarySignalMask(const TemporarySignalMask&) = delete;
    TemporarySignalMask& operator=(const TemporarySignalMask&) = delete;

  private:
    uint64_t saved_ = 0;
    bool active_ = false;
};

// For signalfd reads (signalfd.h), on a user thread: takes one pending signal in `set` that the
// calling thread may take (its own, or any process-directed one, whichever thread was chosen to
// be woken for it), as the sigwait family does, whether the thread blocks it or not; returns it
// (0: none) and its info.
int takeSignalIn(uint64_t set, siginfo_t* info);
// Whether the calling user thread has such a signal pending.
bool signalPendingFor(uint64_t set);

// For siglongjmp on a user thread (setjmp.cc), before it jumps to a frame whose stack pointer is
// `targetSp`: the virtual mask becomes *savedMask when the jump buffer saved one (null: unchanged,
// as natively), a jump out of handlers running in kernel context restores the carrier's real mask
// (the kernel's sigreturn, which would have, never runs), and a jump out of program system calls
// (ProgramSyscall) ends what their markers began, their blocking-call bracket last: if the core
// was lent meanwhile, the thread goes on from here on another carrier.
void prepareLongJump(const uint64_t* savedMask, uintptr_t targetSp);

// In a fork child, on the forking thread (fork.cc), before the child's runtime exists: resets what
// other threads may have held or left behind.
void resetSignalsAfterFork();
// In a fork child, once its runtime runs: restarts the helper thread that hands out
// process-directed signals (if the parent had one).
void restartSignalHelperAfterFork();

// After pthread_cancel asked a thread for an asynchronous cancellation: has the helper thread
// interrupt it again every millisecond while it runs with that cancellation outstanding, as it does
// for pending signals. The SIGCANCEL handler refuses to act while the thread runs inside this
// library, and a thread that computes between interposed calls (or was just resuming from a
// preemption there) would otherwise compute on, uncancelled, for good.
void watchAsyncCancel();

// Counts the calling user thread into (+1) or out of (-1) a blocking call
// (InterruptibleBlockingCall).
void markBlockingCall(int delta);
// Sets the calling user thread's innermost program system call (ProgramSyscall) to `frame` (null:
// none); returns the one it replaces.
ProgramSyscallFrame* markProgramSyscall(ProgramSyscallFrame* frame);

// Start-up (before any handler that calls pcInLibrary is installed): finds the code ranges below.
void initCodeRanges();
// Whether `pc` lies in this library's code or in the context-switch code it runs (Boost.Context),
// where an asynchronous handler must not run.
bool pcInLibrary(uintptr_t pc);
// Whether the context a signal interrupted (a ucontext_t) on the calling thread was running this
// library: a pc in its code, or in the `syscall; ret` in libc's text that its raw system calls go
// through (arbrt/embed/raw_syscall.h) when called from its code, unless that call is the
// program's own (ProgramSyscall). That sequence is libc's own getpid, so the return address tells
// a raw call of this library's from the program's getpid().
bool interruptedInLibrary(const void* ucontext);

}  // namespace arbrun
