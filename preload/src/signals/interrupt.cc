// The interrupt contract (interrupt.h) on top of virtual signals (signals.h) and cancellation
// (cancel.h).
#include "signals/interrupt.h"

#include <errno.h>

#include "arbrt/io.h"
#include "libc/shim.h"
#include "signals/signals.h"
#include "threads/cancel.h"

namespace arbrun {

bool interruptPending() {
    return onUserThread() && (cancelActionable() || signalDeliverable());
}

bool deliverInterrupts(bool honourRestart) {
    if (!onUserThread()) return false;
    if (cancelActionable()) actOnCancel();
    bool restartable = true;
    return deliverPendingSignals(&restartable) > 0 && (!restartable || !honourRestart);
}

bool signalInterruptPending() {
    return signalDeliverable();  // false without a user thread's signal state
}

void runSignalHandlers() {
    bool restartable = true;
    deliverPendingSignals(&restartable);
}

void takeSignalsAfterCall() {
    if (!signalDeliverable()) return;
    const int savedErrno = errno;
    runSignalHandlers();
    errno = savedErrno;
}

void takeSignalsAfterProgramCall(const void* caller) {
    // The cheap look first: nothing deliverable is the hot case (clock_gettime).
    if (signalDeliverable() && !pcInLibrary(reinterpret_cast<uintptr_t>(caller))) {
        takeSignalsAfterCall();
    }
}

InterruptibleBlockingCall::InterruptibleBlockingCall() {
    markBlockingCall(+1);
}

InterruptibleBlockingCall::~InterruptibleBlockingCall() {
    markBlockingCall(-1);
}

// The order matters for a signal landing between the steps: the bracket opens first and closes
// last, so the frame a handler may jump out of always holds the bracket's token.
ProgramSyscall::ProgramSyscall() : frame_{nullptr, arbrt::enterBlockingCall()} {
    markBlockingCall(+1);
    frame_.outer = markProgramSyscall(&frame_);
}

ProgramSyscall::~ProgramSyscall() {
    markProgramSyscall(frame_.outer);
    markBlockingCall(-1);
    arbrt::exitBlockingCall(frame_.bracketToken);
}

void actOnAsynchronousEvents() {
    if (!onUserThread()) return;
    if (asyncCancelActionable()) actOnCancel();
    if (signalDeliverable()) runSignalHandlers();
}

}  // namespace arbrun
