// What each user thread keeps for virtual signals (ShimThreadState::signals). Signal `n` (1..64) is
// bit n-1 of every 64-bit set below. All-zero (the extension storage's initial state) means: no
// signal blocked, none pending, no alternate stack, not registered; signalThreadStart() fills in
// the mask inherited from the creator before the thread runs its start routine.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "arbrt/thread.h"

namespace arbrun {

struct ProgramSyscallFrame;  // interrupt.h

struct SignalThreadState {
    // The thread's virtual signal mask. Written only by the thread itself (pthread_sigmask,
    // sigsuspend, handler entry/exit); read by anyone choosing a thread for a signal (seq_cst
    // against `pending`/the process-wide pending set, so a chooser and the thread never both miss).
    std::atomic<uint64_t> blocked;
    // Signals directed at this thread (pthread_kill/pthread_sigqueue) not yet delivered: set by any
    // thread, cleared by this thread when it takes one.
    std::atomic<uint64_t> pending;
    // Which pending signals have a queued value in the process-wide info table (pthread_sigqueue).
    std::atomic<uint64_t> queued;
    // While in sigwait/sigwaitinfo/sigtimedwait: the set it waits for (0 otherwise). Written by the
    // thread, read by choosers.
    std::atomic<uint64_t> waitingFor;
    // sigaltstack, per thread. Written and read only by the thread itself.
    void* altBase;
    size_t altSize;
    uint32_t altDisabled;  // 0 means "no alternate stack" only while altBase is null
    uint32_t registered;   // 1 while linked in the registry (owner-only flag)
    // The registry of live user threads (signal choosers walk it): links guarded by its lock.
    SignalThreadState* prev;
    SignalThreadState* next;
    arbrt::ThreadId self;  // this thread's handle, for waking it
    // Program handlers running in kernel context on this thread (called from the kernel's signal
    // frame on a carrier, whose real mask then blocks every signal): how many, a stack address
    // just below the outermost one's frame, and the real mask it interrupted. A handler that
    // leaves by siglongjmp or pthread_exit skips the kernel's sigreturn, so those restore the
    // real mask. Written and read only by the thread itself.
    uint32_t kernelHandlers;
    // Set by whoever chooses this thread to take a process-directed signal (distribute,
    // pendProcess), before it stores the choice in gTaker; read by the thread when it ends, which
    // looks through gTaker for choices to undo only if it was ever chosen (signalThreadEnd).
    std::atomic<uint32_t> chosenAsTaker;
    uintptr_t kernelHandlerSp;
    uint64_t kernelHandlerMask;
    // Non-zero while the thread is inside blockingCall() (a system call that may block in the
    // kernel): a signal for it may then cut the call short (cutBlockingCallShort). Written by the
    // thread itself; read by the SIGCANCEL handler on its carrier while it runs there.
    uint32_t inBlockingCall;
    // Set by cutBlockingCallShort when it turned the kernel's restart of such a call into EINTR
    // (the call would have gone on natively once the handlers ran); cleared when such a call
    // begins (markBlockingCall) and by whoever reads it (takeBlockingCallCut). Same writers and
    // readers as inBlockingCall.
    uint32_t blockingCallCut;
    // While the thread makes one of the program's own system calls for it, as it is
    // (ProgramSyscall, interrupt.h): the innermost call's frame, else null. A signal that lands on
    // that call is the program's, although the call goes through this library's raw-call entry
    // (interruptedInLibrary); a long jump above a frame leaves its call (prepareLongJump unlinks
    // it). Written by the thread itself; read by the signal wrapper and the SIGCANCEL handler on
    // its carrier.
    ProgramSyscallFrame* programSyscallFrame;
};
static_assert(sizeof(SignalThreadState) <= 128, "keep the signal state within its share");

}  // namespace arbrun
