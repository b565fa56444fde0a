// Interruption of blocking calls by signals and cancellation: the contract between the waits
// (sleeps, readiness waits, sigsuspend, locks, ...) and the signal/cancellation machinery.
//
// Two kinds of waits, as in glibc:
// - cancellation points that signals may end (condvar waits, sem_wait, sleeps, join, sigwait,
//   ...): interruptPending() / deliverInterrupts();
// - waits that are not cancellation points and that a signal handler only pauses (mutexes,
//   rwlocks, barriers, pthread_once, spinlocks): signalInterruptPending() / runSignalHandlers(),
//   after which the wait goes on, as natively when the kernel runs the handler in the middle of a
//   futex wait and restarts it.
// Either way the handler runs on the waiting thread itself, in normal context, after the wait has
// unlinked itself (nothing of the wait is left behind if the handler calls pthread_exit or
// siglongjmp).
#pragma once

#include <cstdint>

namespace arbrun {

// True when the calling user thread has a signal it should take now (pending and not masked) or an
// actionable cancellation request. Interruptible waits check it each time they wake up; whoever
// makes it true wakes the thread (arbrt::signal for block()/blockUntil(), the parking lot for
// parked ones).
bool interruptPending();

// Acts on what interruptPending() reported: cancellation (does not return) and pending signals
// (runs their handlers on this thread). Returns true when the interrupted call must fail with
// EINTR: a handler ran without SA_RESTART, or any handler ran when `honourRestart` is false (calls
// that Linux never restarts, such as futex waits with a time-out: sem_timedwait).
bool deliverInterrupts(bool honourRestart = true);

// For waits that are not cancellation points: true when the calling user thread has a pending
// signal it does not block (false on kernel threads).
bool signalInterruptPending();
// Runs the handlers of those signals on the calling thread; the caller then goes on waiting.
void runSignalHandlers();

// Marks the calling user thread, for its lifetime, as inside a system call that may block in the
// kernel (blockingCall, io_wait.h). A signal for it then makes the call fail with EINTR instead of
// waiting for the call to end (cutBlockingCallShort), so that its handler runs while the call
// would natively have been interrupted.
class InterruptibleBlockingCall {
  public:
    InterruptibleBlockingCall();
    ~InterruptibleBlockingCall();
    InterruptibleBlockingCall(const InterruptibleBlockingCall&) = delete;
    InterruptibleBlockingCall& operator=(const InterruptibleBlockingCall&) = delete;
};

// One of the program's own system calls this library makes for it (ProgramSyscall), as it lies on
// the thread's stack while the call runs: what a long jump out of the call must undo, since the
// marker's destructor then never runs (prepareLongJump, signals.h).
struct ProgramSyscallFrame {
    ProgramSyscallFrame* outer;  // the program call this one runs inside (from a handler), or null
    uint64_t bracketToken;  // its blocking-call bracket (arbrt/io.h); 0: an outer one covers it
};

// Marks the calling user thread, for its lifetime, as making one of the program's own system calls
// as it is (a raw call passed through, raw_syscalls.cc). The call is bracketed as a blocking call
// (arbrt/io.h: its core may be lent meanwhile) and interruptible (as InterruptibleBlockingCall),
// and a signal that lands on it is the program's: its handler runs at once, as natively, although
// this library makes the call (interruptedInLibrary would otherwise defer it until the call
// returns, which for a call the kernel restarts may be never). Such a handler may leave by a long
// jump; the jump then ends all three (prepareLongJump), or the core would keep the bracket's stamp
// while the thread runs on, and the monitor would lend away a core its carrier still runs.
class ProgramSyscall {
  public:
    ProgramSyscall();
    ~ProgramSyscall();
    ProgramSyscall(const ProgramSyscall&) = delete;
    ProgramSyscall& operator=(const ProgramSyscall&) = delete;

  private:
    ProgramSyscallFrame frame_;
};

// For the SIGCANCEL handler (async-signal-safe) when the user thread running on this carrier has a
// signal to take and is inside an InterruptibleBlockingCall: if the kernel restarted its system
// call (the interrupted instruction is the `syscall` again), makes it return EINTR instead.
void cutBlockingCallShort(void* ucontext);

// After an InterruptibleBlockingCall whose call returned EINTR: true when that EINTR was
// cutBlockingCallShort's (the kernel had restarted the call; it goes on after handlers that all
// had SA_RESTART, as natively), false when the kernel itself ended the call. Clears the record.
bool takeBlockingCallCut();

// At the end of a system call made through syscall() (whose result, and errno, the caller sees
// next): pending signals run their handlers, as the kernel delivers them on its way back to user
// space. Keeps errno as the call left it.
void takeSignalsAfterCall();

// After a call the program spins on that takes no system call (clock_gettime in the vDSO), where
// the carrier's interruption is refused as it is in every object the runtime does not own:
// pending signals run their handlers, as they would have interrupted the native loop, unless
// `caller` (the call's return address) is this library, whose own waits must see them as
// interruptions. Keeps errno.
void takeSignalsAfterProgramCall(const void* caller);

// For code that spins or computes inside this library (spinlocks): what a native thread spinning
// there would have had happen asynchronously: pending signals run their handlers, and an
// asynchronous cancellation acts (does not return).
void actOnAsynchronousEvents();

}  // namespace arbrun
