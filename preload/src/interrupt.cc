// The interrupt contract (interrupt.h) on top of virtual signals (signals.h) and cancellation
// (cancel.h).
#include "interrupt.h"

#include "cancel.h"
#include "shim.h"
#include "signals.h"

namespace arbrun {

bool interruptPending() {
    return onUserThread() && (cancelActionable() || signalDeliverable());
}

bool deliverInterrupts() {
    if (!onUserThread()) return false;
    if (cancelActionable()) actOnCancel();
    bool restartable = true;
    return deliverPendingSignals(&restartable) > 0 && !restartable;
}

}  // namespace arbrun
