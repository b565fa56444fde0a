// The arbiter-mode request sender (request_sender.h).
#include "arbiter/request_sender.h"

#include <string>

#include "arbiter/estimation.h"
#include "diag/trace.h"
#include "platform/arch.h"
#include "sched/runtime_state.h"

namespace arbrt::detail {
namespace {

// Delivers `request`; false (and the arbiter keeps the previous one) when it cannot be delivered.
bool send(RuntimeState& rt, const CoreRequest& request, std::string* error) {
    uint32_t total = 0;
    for (uint32_t n : request.perPriority) total += n;
    traceEvent(TraceEvent::request, -1, -1, total);
    return rt.provider->setRequestedCores(request.perPriority, request.minCores, request.maxCores,
                                          error);
}

// Sleeps until a change is flagged; the exchange (acq_rel) pairs with requestChanged()'s, so the
// counts read afterwards include every change flagged before it. A change that fails to be
// delivered is tried again at the next change.
void* senderMain(void*) {
    RuntimeState& rt = *gRuntime;
    RequestSender& s = rt.requestSender;
    for (;;) {
        while (s.wake.load(std::memory_order_acquire) == 0) futexWait(&s.wake, 0, nullptr);
        if (rt.stopping.load(std::memory_order_acquire)) return nullptr;
        s.wake.exchange(0, std::memory_order_acq_rel);
        const CoreRequest request = computeCoreRequest(currentRequestInputs());
        std::string error;
        if (request != s.last && send(rt, request, &error)) s.last = request;
    }
}

}  // namespace

// Relaxed loads of counters that change independently: the request is a hint the sender refreshes
// at every change.
RequestInputs currentRequestInputs() {
    RuntimeState& rt = *gRuntime;
    RequestInputs in;
    in.priority = rt.options.priority;
    in.minCores = rt.options.minCores;
    in.maxCores = uint32_t(rt.numCores);
    // The core estimator's estimate when there is one (estimation.h), else every core.
    const uint32_t estimate = estimatedCores();
    in.poolDemand = estimate ? estimate : uint32_t(rt.numCores);
    in.exclusiveThreads = rt.policy.exclusiveThreads();
    in.batchThreads = rt.policy.batchThreads();
    // The counts are updated at different moments of a thread's creation and exit: saturate.
    const uint64_t live = rt.liveThreads.load(std::memory_order_relaxed);
    const uint64_t classed = uint64_t(in.exclusiveThreads) + in.batchThreads;
    in.normalThreads = live > classed ? uint32_t(live - classed) : 0;
    return in;
}

// Start-up, before any carrier or sender thread exists: `last` needs no synchronisation.
std::optional<Error> sendInitialRequest() {
    RuntimeState& rt = *gRuntime;
    if (!rt.provider) return std::nullopt;
    const CoreRequest request = computeCoreRequest(currentRequestInputs());
    std::string error;
    if (!send(rt, request, &error)) {
        return Error{Errc::systemError, "cannot request cores from the core arbiter: " + error};
    }
    rt.requestSender.last = request;
    return std::nullopt;
}

// A kernel thread made with the host's pthread_create: the arbiter client's libc calls from it
// reach the real libc.
bool startRequestSender() {
    RuntimeState& rt = *gRuntime;
    if (!rt.provider) return true;
    rt.requestSender.started = hostCreateThread(&rt.requestSender.thread, senderMain, nullptr) == 0;
    return rt.requestSender.started;
}

// stop(): `stopping` is set (release) before the wake, and the sender checks it after waking.
void stopRequestSender() {
    RuntimeState& rt = *gRuntime;
    RequestSender& s = rt.requestSender;
    if (!s.started) return;
    s.wake.store(1, std::memory_order_release);  // after `stopping` was set
    futexWake(&s.wake, 1);
    hostJoinThread(s.thread);
    s.started = false;
}

// The exchange (acq_rel) pairs with the sender's: a count changed before it is read by the
// sender's next computation. Wakes it only when it was idle (the word was 0).
void requestChanged() {
    RuntimeState& rt = *gRuntime;
    if (!rt.provider) return;
    if (rt.requestSender.wake.exchange(1, std::memory_order_acq_rel) == 0)
        futexWake(&rt.requestSender.wake, 1);
}

}  // namespace arbrt::detail
