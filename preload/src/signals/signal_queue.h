// Process-directed signals recorded but not yet taken, and the flood control that leaves the
// excess in the kernel's own queue.
//
// What is recorded: one siginfo per standard signal (they do not queue: a second instance while
// one is pending is dropped, as the kernel drops it) and a FIFO per real-time signal (they queue,
// in order, each with its value, as POSIX requires). A signal's bit in processPendingSignals() is
// set exactly while something of it is recorded (or, rarely, while a nested handler found the
// record busy and could only set the bit).
//
// Flood control. Carriers never block the program's signals of their own accord (signals.h), so
// the kernel would hand every instance to the wrapper at once, whatever the program's masks say.
// A sender faster than the program's taker would then keep the receiving carriers inside the
// wrapper (natively the signal stays queued in the kernel, which turns the sender away with
// EAGAIN at RLIMIT_SIGPENDING), and real-time instances beyond a bounded record would be lost.
// So signals are held in the kernel's queue, blocked in the real masks of this library's kernel
// threads: a real-time one on all of them from the moment its wrapper is installed
// (holdEverywhere), a standard one by a thread that records it while it is already pending
// (holdInKernel). One kernel thread at a time then takes instances from the kernel's queue, so
// they are recorded in its order: the helper while it waits with the held signals that have room
// unblocked (its window, openHelperWindow), or, with the window shut, whoever looks at the record
// and must see what natively would be pending (refillHeldSignals, takeProcessSignal). A standard
// signal's taker discards what the kernel kept meanwhile (it arrived while one was pending) and
// its carrier unblocks the signal again (releaseHeldSignal). Real-time signals stay held: two
// carriers receiving at once could record two instances in the wrong order.
#pragma once

#include <signal.h>

#include <cstdint>

namespace arbrun {

// Real-time signals (the kernel's 32..64; glibc keeps 32 and 33) queue; lower ones do not.
constexpr int kFirstRealtimeSignal = 32;
constexpr int kRealtimeDepth = 32;      // instances recorded per real-time signal at most
constexpr int kRealtimeHighWater = 16;  // the helper receives while fewer are recorded

// The signals with something recorded (bit n-1 for signal n). Sequentially consistent with the
// setting of each thread's mask (signals.cc: a chooser and the thread never both miss).
uint64_t processPendingSignals();

// Records one instance of process-directed `sig` (async-signal-safe; called by the wrapper with
// every other real signal blocked). Returns whether the receiving kernel thread should now block
// `sig` (holdInKernel): a flood. An instance that finds the record full goes back to the kernel's
// queue (rt_sigqueueinfo to this process), which then keeps it.
bool recordProcessSignal(int sig, const siginfo_t& info);

// Takes the oldest recorded instance of `sig` into *info (none: nothing is recorded; helperBusy:
// a held standard signal while the helper's window is open: wake it and try again). With every real
// signal blocked on the calling kernel thread (handlers take the record's lock). A held standard
// signal sets *drained: the caller should unblock it on its carrier (releaseHeldSignal) once its
// real mask is its own again.
enum class TakeResult { taken, none, helperBusy };
TakeResult takeProcessSignal(int sig, siginfo_t* info, bool* drained);

// In the wrapper, after recordProcessSignal asked for it: the interrupted context's mask (which
// sigreturn gives the kernel thread back) blocks `sig` from now on.
void holdInKernel(int sig, void* ucontext);

// A real-time signal the program now handles, blocks or waits for (its wrapper was just
// installed) is held on every kernel thread of the library from the start: each is sent SIGCANCEL
// with kHoldRefresh, whose handler adds the held signals to the mask it returns to
// (adoptHeldSignals). Otherwise the first instances of a flood would reach several carriers at
// once, which could record them in the wrong order. True when `sig` was not held before: the
// caller then wakes the helper, whose window must be reopened to receive it.
constexpr int kHoldRefresh = 0x686f6c64;
bool holdEverywhere(int sig);
// In the SIGCANCEL handler, for kHoldRefresh: the interrupted context's mask holds them too.
void adoptHeldSignals(void* ucontext);
// The held real-time signals, which a new kernel thread of the library blocks from its start.
uint64_t heldRealtimeSignals();

// Unblocks `sig` on the calling kernel thread after takeProcessSignal drained it.
void releaseHeldSignal(int sig);

// Signals some kernel thread may hold in the kernel (never forgotten but by fork).
uint64_t heldSignals();

// Moves what the kernel keeps of the held signals in `set` into the record, while there is room,
// so that a look at the record (a zero-timeout take, sigpending, a mask that unblocks one) sees
// what natively would be pending. With every real signal blocked on the calling kernel thread.
// False, doing nothing, while the helper's window is open: wake the helper and try again.
bool refillHeldSignals(uint64_t set);

// The helper's wait. openHelperWindow (with every signal blocked on the helper) returns the held
// signals with room in the record, which the helper unblocks while it waits; nobody else takes
// from the kernel's queue until closeHelperWindow (after the helper blocked them again), which
// refills the record. One kernel thread at a time takes from the kernel's queue, in its order.
uint64_t openHelperWindow();
void closeHelperWindow();
// While a thread waits for the window to close (refillHeldSignals or takeProcessSignal said it
// was open), the helper must not open it again: shut (true) before waking the helper, then
// false once done, and wake the helper again.
void keepHelperWindowShut(bool shut);

// In a fork child (nothing is pending in a new process): forgets every record and the standard
// signals' holds, which the forking thread unblocks; real-time ones stay held (their wrappers stay,
// and the child's kernel threads are made from this one's mask).
void resetProcessSignalsAfterFork();

}  // namespace arbrun
