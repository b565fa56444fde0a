// The embedding interface: what a layer that maps another thread API onto user threads (the
// preload library's pthreads) needs beyond the public API (arbrt/arbrt.h). Programs written for
// arbrt use the public API only; the headers under arbrt/embed/ are not installed with it.
//
// Why a separate interface: the public API hands out ThreadId handles and hides contexts; an
// embedding layer must create a thread in two steps (allocate, fill in its own per-thread state
// and its start record on the new stack, then launch) and map the foreign thread handle — here
// the TCB address glibc's pthread_t is — back to the user thread.
#pragma once

#include "arbrt/thread.h"

namespace arbrt::detail {
// Defined in the runtime (thread.cc); declared here, not in the public header.
void* tcbOf(ThreadContext* context);
ThreadId threadFromTcb(const void* tcb);
}  // namespace arbrt::detail

namespace arbrt::embed {

using detail::ThreadContext;

// Creation in two steps. allocateThread() reserves a context, stack and TCB for `attributes` (null
// with *err = EAGAIN or EINVAL); reserveClosureSpace() carves the start record out of the top of
// its stack; launchThread() makes it runnable (with `exclusiveFallback`, reports whether an
// exclusive thread got no core of its own).
using detail::allocateThread;
using detail::launchThread;
using detail::reserveClosureSpace;

// The TCB (what pthread_self() returns) of a context from allocateThread().
using detail::tcbOf;
// The live user thread whose TCB is `tcb`, or a null handle if `tcb` is not a user thread's.
using detail::threadFromTcb;

// Sends `sig` to the kernel thread running `thread` now so that a handler there acts on what the
// caller published before (a cancellation, a pending signal), unless a signal sent by this
// function to that kernel thread is still untaken: its handler will read the caller's state.
// False when the thread runs nowhere (nothing to interrupt). Not async-signal-safe.
bool interruptCarrierOf(ThreadId thread, int sig);
// The handler's first step on a carrier (async-signal-safe): the pending interruption is taken.
// Callers of interruptCarrierOf() after this point send again.
void interruptTaken();

// The embedding layer may block `sig` on carriers from now on, at any time, for flood control:
// a carrier's real mask that differs from its base mask only in such signals still counts as its
// base mask (no handler of the program's runs there), for preemption and syscall dispatch.
// Async-signal-safe.
void noteHeldSignal(int sig);

}  // namespace arbrt::embed
