// Cancellation of user threads. The state is glibc's own: the `cancelhandling` word of the
// target's struct pthread (our user threads have real glibc TCBs), so glibc's
// pthread_setcancelstate, pthread_setcanceltype, pthread_exit and its cancellation points inside
// libc (read, write, ...: they check the word) all behave as with native threads. pthread_cancel
// sets the word and wakes the target; our own cancellation points (waits, sleeps, join, sigwait,
// ...) call deliverInterrupts(), which acts on it through glibc's pthread_exit(PTHREAD_CANCELED)
// (unwinding to the thread's entry trampoline: cleanup handlers and C++ destructors run).
// Asynchronous cancellation (and glibc's own cancellation points, which run in asynchronous mode
// around their system call) interrupts the target's carrier with SIGCANCEL; the handler acts only
// if the user thread running there is cancelled, enabled and asynchronous, as glibc's does, and
// was not interrupted inside this library; the signal helper interrupts it again every
// millisecond until it has acted (signals.h: watchAsyncCancel), and a preempted thread acts when
// it resumes.
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
// Whether `thread`, a live user thread (the caller keeps it registered), has an asynchronous
// cancellation it has not acted on yet: requested, enabled, asynchronous, not exiting. One load
// from its TCB; any thread may call it.
bool asyncCancelOutstanding(arbrt::ThreadId thread);
// Acts on it: never returns.
[[noreturn]] void actOnCancel();
// Interrupts the user thread `target` where it runs now, if it runs (SIGCANCEL to its carrier):
// an asynchronous cancellation acts and pending signals run their handlers there, as they would
// natively, when it computes at a safe point (arbrt::interruptAtSafePoint). A thread that is not
// running, or runs inside this library, libc or the runtime, acts at its next interruptible
// point instead. Returns whether it was running (its carrier was interrupted). Any thread may
// call it.
bool interruptUserThread(arbrt::ThreadId target);
// The helper's retry of an asynchronous cancellation that `target` has not acted on (signals.h:
// watchAsyncCancel): interrupts it where it runs, like interruptUserThread, with a signal its
// handler tells apart, which acts only at a safe point (outside this library, libc, the loader,
// libstdc++ and libgcc, as preemption defines it), through the resume hook in normal context:
// the runtime itself runs on user threads and calls into libc and the loader (locks, TLS, the
// loader's own lock), and a retry that unwound the thread there would leave their locks held.
// Returns whether it was running.
bool retryAsyncCancel(arbrt::ThreadId target);

}  // namespace arbrun
