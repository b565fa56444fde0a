// What the preload library keeps per user thread, in the runtime's per-thread extension storage
// (arbrt::threadExtension: zeroed when the thread is created, so every part must treat all-zero as
// its initial state).
#pragma once

#include <cstddef>

#include "arbrt/thread.h"
#include "signals/signal_state.h"
#include "sync/robust_list.h"
#include "threads/classes.h"
#include "threads/identity_state.h"
#include "threads/schedule_state.h"
#include "threads/tid_address.h"

namespace arbrun {

// One member per concern, each documented (with its concurrency rules) in its own header.
struct ShimThreadState {
    ThreadClassState threadClass;  // --class rules: classes.h
    IdentityState identity;        // name and affinity (identity_state.h)
    ScheduleState schedule;        // scheduling policy and priority (schedule_state.h)
    SignalThreadState signals;     // masks, pending signals, sigaltstack (signal_state.h)
    RobustListState robustList;    // set_robust_list registration (robust_list.h)
    TidAddressState tidAddress;    // set_tid_address registration (tid_address.h)
};
static_assert(sizeof(ShimThreadState) <= arbrt::kThreadExtensionBytes,
              "the per-thread shim state must fit the runtime's extension storage");

// The state of a live user thread, or null for a null handle.
inline ShimThreadState* shimStateOf(arbrt::ThreadId thread) {
    return static_cast<ShimThreadState*>(arbrt::threadExtension(thread));
}

// The calling user thread's state, or null on a kernel thread.
inline ShimThreadState* selfShimState() {
    return static_cast<ShimThreadState*>(arbrt::selfExtension());
}

}  // namespace arbrun
