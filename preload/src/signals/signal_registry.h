// What signals.cc shares with the helper thread (helper.cc): the registry of live user threads,
// the main thread and the chosen takers, by which both pick the thread a process-directed signal
// goes to. Not for other files: the rest of the library goes through signals.h.
#pragma once

#include <atomic>
#include <cstdint>

#include "arbrt/embed/spin_lock.h"
#include "signals/kernel_sigaction.h"
#include "threads/thread_state.h"

namespace arbrun {

// The registry of live user threads (for choosing who gets a process-directed signal), linked
// through SignalThreadState::next/prev under gRegistryLock.
extern arbrt::embed::SpinLock gRegistryLock;
extern SignalThreadState* gRegistryHead;
// The thread running main() (the first one registered; in a fork child, the forking thread), which
// the kernel prefers for a process-directed signal it does not block: programs rely on it (a main
// thread in pause() that its workers wake with kill(getpid(), ...)). Null once it has ended.
// Written under gRegistryLock; read without it (a snapshot is enough to choose).
extern std::atomic<SignalThreadState*> gLeader;
// The thread chosen to take each process-pending signal, as the kernel chooses one to wake: only
// it takes the signal at its interruptible points (null: any thread that does not block it). Set
// before the signal's pending bit by whoever records it (the main thread when it wants it) and by
// the helper; left as it is after a take (the next instance sets it again).
extern std::atomic<SignalThreadState*> gTaker[kMaxSignal + 1];

// Whether `t` would take `sig` now: it does not block it, or waits for it in sigwait.
bool wants(const SignalThreadState* t, int sig);

// Sets the calling kernel thread's real mask to `mask` (old one to *old if given), never blocking
// SIGCANCEL or SIGSETXID; through the raw system call (signals.cc says why).
void setRealMask(uint64_t mask, uint64_t* old);

}  // namespace arbrun
