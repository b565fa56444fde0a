// Waits on process-shared objects (mutexes, condition variables, semaphores, rwlocks) go to the
// real libc, whose wait blocks the calling kernel thread in the kernel. Bracketed as a blocking
// call (arbrt/io.h), such a wait lets the monitor lend the core to a spare carrier while it lasts
// (invariant 6: nothing blocks a carrier silently). Without it a timed wait held its core until the
// deadline: the retake takes only waits without one, and a thread queued behind the waiter (say the
// one that would post) never ran (fio's startup semaphore: "job startup hung?").
#pragma once

#include "arbrt/io.h"

namespace arbrun {

// call(), bracketed as a blocking call (a no-op bracket on kernel threads and in native mode).
template <typename Call>
auto asBlockingCall(Call call) {
    arbrt::BlockingCall blocking;
    return call();
}

}  // namespace arbrun
