// The interrupt contract (interrupt.h) on top of virtual signals (signals.h) and cancellation
// (cancel.h).
#include "signals/interrupt.h"

#include <errno.h>

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

InterruptibleBlockingCall::InterruptibleBlockingCall() {
    markBlockingCall(+1);
}

InterruptibleBlockingCall::~InterruptibleBlockingCall() {
    markBlockingCall(-1);
}

ProgramSyscall::ProgramSyscall() : outer_(markProgramSyscall(reinterpret_cast<uintptr_t>(this))) {}

ProgramSyscall::~ProgramSyscall() {
    markProgramSyscall(outer_);
}

void actOnAsynchronousEvents() {
    if (!onUserThread()) return;
    if (asyncCancelActionable()) actOnCancel();
    if (signalDeliverable()) runSignalHandlers();
}

}  // namespace arbrun
