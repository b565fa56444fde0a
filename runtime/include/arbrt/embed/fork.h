// fork() in a process running the runtime, and iteration over live user threads.
//
// Only the forking kernel thread survives a fork: in the child every carrier is gone, and with them
// every user thread but the one that called fork() (if a user thread did). The embedding layer (the
// preload library) calls the three hooks around the real fork, from pthread_atfork handlers it
// registered before any other, so that prepareFork() runs after every other prepare handler and
// the after-fork hooks before every other parent/child handler:
//
//   prepareFork()       takes the runtime's process-wide locks (context pool, static TLS list) so
//                       that no other carrier holds them, half-updated, at the instant of fork;
//   parentAfterFork()   releases them;
//   childAfterFork(n)   rebuilds the runtime in the child with n cores (standalone: the child never
//                       uses the parent's core arbiter). The other user threads become stale
//                       handles (ESRCH); their stacks and TCBs are leaked, never touched: nothing
//                       in the child may run on them. Parked waiters of the parent are forgotten. A
//                       forking user thread continues on a carrier of the new runtime; the forking
//                       kernel thread then waits for the child's last user thread and calls
//                       exit(0), as glibc does when a process's last thread exits.
#pragma once

#include <optional>

#include "arbrt/errors.h"
#include "arbrt/thread.h"

namespace arbrt {

void prepareFork();
void parentAfterFork();
// Returns an error (the child then has no runtime: isRunning() is false) if carriers could not be
// created. Does nothing if the runtime was not running at fork time.
std::optional<Error> childAfterFork(int numCores);

// Calls fn(thread, tcb, arg) for every live user thread (created and not yet exited), with its TCB.
// Safe against concurrent creation and exit: the TCB stays valid during the call (the thread may
// exit meanwhile; its handle then turns stale). fn must not create threads.
void forEachLiveThread(void (*fn)(ThreadId thread, void* tcb, void* arg), void* arg);

namespace detail {
// Empties every parking-lot bucket and resets its lock (parking_lot.cc): in a fork child every
// parked waiter belongs to a thread that no longer exists.
void resetParkingLotAfterFork();
}  // namespace detail

}  // namespace arbrt
