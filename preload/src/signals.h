// Virtual per-user-thread signals: the parts other files of the preload library call.
//
// Rules (documented once here):
// - Dispositions: sigaction()/signal() record the program's handler in a table and install one
//   wrapper in the kernel for every signal the program handles, blocks or waits for (never for
//   SIGKILL/SIGSTOP, or glibc's internal SIGCANCEL/SIGSETXID). Carriers and other kernel threads
//   keep their real masks as they are (nothing the program handles is blocked there), so the kernel
//   may deliver a process-directed signal to any of them; the wrapper then decides.
// - Masks are virtual (SignalThreadState::blocked). The wrapper runs the program's handler right
//   away on the interrupted user thread when that thread does not block the signal and was not
//   interrupted inside this library (whose locks it might hold); otherwise the signal becomes
//   process-pending and one thread is chosen: a sigwait-er for it, else another user thread that
//   does not block it (woken with arbrt::signal), else the interrupted one. Pending signals are
//   delivered at the next interruptible point: waits that call interruptPending(), sleeps,
//   sigmask changes, sched_yield-like points, pthread_testcancel.
// - pthread_kill/pthread_sigqueue to a user thread: pending on that thread, which is woken; to the
//   caller itself: delivered before returning when not blocked. raise() is pthread_kill(self).
// - Synchronous faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS raised by the kernel) run
//   the handler at once on the faulting thread.
// - A handler runs with the thread's virtual mask extended by sa_mask (and the signal itself unless
//   SA_NODEFER), on the thread's alternate stack when SA_ONSTACK is set and one is configured.
//   Limitation: a handler run from a pending set that siglongjmp()s out leaves the virtual mask as
//   it was inside the handler (glibc restores only the carrier's real mask).
#pragma once

#include <signal.h>

#include <cstdint>

namespace arbrun {

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

// Whether `pc` lies in this library's code (where an asynchronous handler must not run).
bool pcInLibrary(uintptr_t pc);

}  // namespace arbrun
