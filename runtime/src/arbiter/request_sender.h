// Arbiter mode: keeps the core arbiter's request in step with the process's thread classes. The
// request is recomputed (core_request.h) and sent by a kernel thread of the runtime's own: the
// calls that change it run on user threads, which must not wait for the arbiter's reply, and
// the arbiter client's calls must reach the real libc (they do on the runtime's kernel threads).
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <optional>

#include "arbiter/core_request.h"
#include "arbrt/errors.h"

namespace arbrt::detail {

// The sender's state, one per runtime (RuntimeState::requestSender). `wake` is the futex word the
// thread sleeps on (1: recompute), set by any thread; `last` (the request the arbiter has) is
// written at start-up, before the thread exists, and then only by the thread.
struct RequestSender {
    std::atomic<uint32_t> wake{0};
    CoreRequest last;
    pthread_t thread{};
    bool started = false;
};

// The rule's inputs for the runtime as it is now: options, live threads, the policy's counts.
RequestInputs currentRequestInputs();
// Sends the first request synchronously (start-up; no-op in standalone mode).
std::optional<Error> sendInitialRequest();
// Starts / stops the sender thread (arbiter mode only; false if it cannot be created).
bool startRequestSender();
void stopRequestSender();
// The inputs changed (a class count, or the number of normal threads while batch threads live):
// the sender recomputes and sends if the request differs. No-op in standalone mode; otherwise one
// exchange, and a futex wake only when the sender sleeps.
void requestChanged();

}  // namespace arbrt::detail
