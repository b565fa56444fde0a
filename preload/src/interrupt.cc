// Placeholder until per-user-thread signals and cancellation land: nothing ever interrupts a wait.
#include "interrupt.h"

namespace arbrun {

bool interruptPending() {
    return false;
}

bool deliverInterrupts() {
    return false;
}

}  // namespace arbrun
