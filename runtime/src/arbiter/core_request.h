// What the process asks the core arbiter for, from its threads' classes: a pure function (no
// threads, no runtime state), table-tested in runtime/tests/core_request_test.cc.
//
// The rule, with p the process's priority level (0 highest) and M the most cores it may use (one
// carrier each):
//   1. Each exclusive thread wants a core of its own: E = min(exclusive threads, M - 1) cores, at
//      level p (one core always stays for the shared pool).
//   2. The shared pool (normal and batch threads) wants P = poolDemand cores, at least 1 and at
//      most M - E. Today poolDemand is every core the process may use (M); the core estimator will
//      supply its estimate instead.
//   3. Without batch threads the whole pool is asked for at level p. With batch threads, the
//      normal threads can use at most one core each: N = min(P, normal threads) cores at level p,
//      and the cores only batch threads need, B = min(P - N, batch threads), at level
//      min(p + 1, 7): the arbiter takes cores from lower levels first, so those go first. At
//      p = 7 both share the lowest level.
//   4. minCores and maxCores pass through (minCores capped at maxCores).
// So a process without exclusive or batch threads asks for exactly what it did before classes: M
// cores at level p.
#pragma once

#include <array>
#include <cstdint>

#include "arbclient/core_provider.h"

namespace arbrt::detail {

// The inputs of the rule above. A plain value.
struct RequestInputs {
    int priority = 3;         // the process's level, 0-7
    uint32_t minCores = 0;    // fewest cores worth having (0: no minimum)
    uint32_t maxCores = 1;    // the most cores it may use (its carriers), >= 1
    uint32_t poolDemand = 1;  // cores the shared pool would use
    uint32_t exclusiveThreads =
        0;                       // live exclusive threads, with a core reserved or waiting for one
    uint32_t normalThreads = 0;  // live normal threads
    uint32_t batchThreads = 0;   // live batch threads
};

// A request as CoreProvider::setRequestedCores takes it. A plain value.
struct CoreRequest {
    std::array<uint32_t, arbclient::kPriorityLevels> perPriority{};
    uint32_t minCores = 0;
    uint32_t maxCores = 0;

    friend bool operator==(const CoreRequest&, const CoreRequest&) = default;
};

// The rule above. Out-of-range inputs are clamped (priority to 0-7, maxCores to at least 1).
CoreRequest computeCoreRequest(const RequestInputs& in);

}  // namespace arbrt::detail
