// Cancellation of user threads. The state is glibc's own: the `cancelhandling` word of the
// target's struct pthread (our user threads have real glibc TCBs), so glibc's
// pthread_setcancelstate, pthread_setcanceltype, pthread_exit and its cancellation points inside
// libc (read, write, ...: they check the word) all behave as with native threads. pthread_cancel
// sets the word and wakes the target; our own cancellation points (waits, sleeps, join, sigwait,
// ...) call deliverInterrupts(), which acts on it through glibc's pthread_exit(PTHREAD_CANCELED)
// (unwinding to the thread's entry trampoline: cleanup handlers and C++ destructors run).
// Asynchronous cancellation (and glibc's own cancellation points, which run in asynchronous mode
// around their system call) interrupts the target's carrier with SIGCANCEL; the handler acts only
// if the user thread running there is cancelled, enabled and asynchronous, as glibc's does.
#pragma once

#include "arbrt/thread.h"

namespace arbrun {

// Installs the kernel handler for SIGCANCEL on carriers (asynchronous cancellation and the
// runtime's preemption requests) and returns the signal's number, for RuntimeOptions.
int installCarrierSignalHandler();
// True when the calling user thread has a cancellation request it must act on at a cancellation
// point (requested, enabled, not already exiting). One load from the TCB.
bool cancelActionable();
// True when that request is also asynchronous (pthread_setcanceltype(ASYNCHRONOUS)): it may act
// anywhere, not only at a cancellation point.
bool asyncCancelActionable();
// Acts on it: never returns.
[[noreturn]] void actOnCancel();
// Interrupts the user thread `target` where it runs now, if it runs (SIGCANCEL to its carrier):
// an asynchronous cancellation acts and pending signals run their handlers there, as they would
// natively, when it computes at a safe point (arbrt::interruptAtSafePoint). A thread that is not
// running, or runs inside this library, libc or the runtime, acts at its next interruptible
// point instead. Returns whether it was running (its carrier was interrupted). Any thread may
// call it.
bool interruptUserThread(arbrt::ThreadId target);

}  // namespace arbrun
