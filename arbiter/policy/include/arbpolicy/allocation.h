// The core allocation policy: who gets how many of the managed cpus (priority levels, even split,
// min/max), then which cpus (siblings and sockets together, stable). Pure functions: no state, no
// threads, no system calls; the daemon calls allocate() whenever requests or the managed set
// change.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <vector>

#include "arbpolicy/topology.h"

namespace arbpolicy {

constexpr int kPriorityLevels = 8;  // 0 = highest priority, 7 = lowest
// Opaque, assigned by the daemon. Where two processes at the same priority cannot both get their
// minCores, the smaller key keeps its minimum, so numbering processes in arrival order keeps
// older processes running rather than letting a newcomer displace them.
using ProcessKey = uint64_t;

// What one process asks for. A plain value built by the daemon from a (clamped) client request.
struct ProcessRequest {
    ProcessKey key;
    std::array<uint32_t, kPriorityLevels> requested{};  // cores wanted at each priority level
    // Granted only if at least this many can be given (0 = no minimum). A minimum above what the
    // process can use at all (its total request, capped by maxCores) is treated as that amount.
    uint32_t minCores = 0;
    uint32_t maxCores = UINT32_MAX;  // never more than this in total
};

// Cpu ids per process, each vector sorted ascending. A plain value.
using Grants = std::map<ProcessKey, std::vector<int>>;

// Pure: (topology of managed cpus, requests, current grants) -> new grants. No state, no system
// calls: safe to call from any thread.
//
// Counts (see computeShares): levels are served from 0 down, a level only gets what higher levels
// left; within a level cores are water-filled (a process asking less than the even share gets what
// it asks, the rest split evenly, differences <= 1); a process's total is capped by maxCores; one
// that cannot reach its minCores gets nothing and its cores go to the others (the lowest-priority,
// then largest-key, process short of its minimum is dropped first, one at a time).
//
// Placement: a process keeps the cpus it holds in `current` (those still in the topology) as long
// as its count allows; a shrinking process gives back cpus and keeps the rest where they are (it
// gives back first on the socket where it holds fewest, and lone hyperthreads before whole cores);
// a growing process takes the free siblings of its cores first, then its own socket(s), whole free
// cores when it needs a core or more and left-over single hyperthreads when it needs less. A cpu
// moves from one process to another only when the first one's count shrank.
//
// Every process in `requests` appears in the result, possibly with no cpus; a key repeated in
// `requests` counts once (the first occurrence). Entries of `current` for processes not in
// `requests`, cpus outside `managed`, and cpus claimed twice in `current` (the smaller key keeps
// it) are ignored. Each cpu of `managed` goes to at most one process. Stable: allocate(t, r,
// allocate(t, r, c)) == allocate(t, r, c).
Grants allocate(const Topology& managed, const std::vector<ProcessRequest>& requests,
                const Grants& current);

// Per priority level, when a process last began a turn with one of the level's odd cores (see
// OddCoreTurns); 0 = never. Larger is more recent.
using TurnStamps = std::array<uint64_t, kPriorityLevels>;

// Time-sharing of odd cores: where a level's cores do not divide evenly among the processes that
// want more than the even share (the "equal claimants"), the extra cores go one each to some of
// them. Which ones is decided by the holdings and by these turn stamps. A plain value, built by the
// caller (the daemon keeps the stamps a previous call returned in ProcessShare::oddCoreTurns).
//
// - rotate == false (every ordinary re-allocation): processes already holding more keep the odd
//   cores; among equal holdings the most recent turn goes first (the process whose turn it is keeps
//   it while its predecessor is still giving the core back), then the smaller key. The counts are
//   those of the plain stable rule whenever holdings differ or no stamps are given.
// - rotate == true (the daemon's share period ended): the least recent turn goes first (0 = never
//   had one), then the process holding less, then the smaller key. Repeated, this hands the odd
//   cores round-robin through the equal claimants.
//
// A process starts a turn when it is given a shared odd core: always when rotating, otherwise only
// when it did not hold one at that level already. Starting a turn sets its stamp at that level to a
// fresh one, larger than every stamp passed in, in the order the processes were chosen; all other
// stamps are returned unchanged.
//
// Neither mode changes how many cores a level gets, what a process asking no more than the even
// share gets, or that a process reaching its minimum only with an odd core gets one first.
struct OddCoreTurns {
    std::map<ProcessKey, TurnStamps> stamps;  // absent = all 0
    bool rotate = false;
};

// How many cores one process gets, per level (what allocate() decided before placing them). A plain
// value.
struct ProcessShare {
    std::array<uint32_t, kPriorityLevels> perLevel{};  // cores granted at each priority level
    uint32_t total = 0;                                // sum of perLevel
    bool belowMinimum = false;  // it could not get its minCores, so it gets none
    // It holds an odd core that an equal claimant at the same level also wants (so it is shared in
    // turn), resp. it is such an equal claimant without one. Some process waits exactly when a
    // rotation (OddCoreTurns::rotate) would move an odd core.
    bool holdsSharedOddCore = false;
    bool waitsForOddCore = false;
    TurnStamps oddCoreTurns{};  // stamps after this call: pass them to the next one
};
using Shares = std::map<ProcessKey, ProcessShare>;

// The counting half of allocate(): `capacity` cores among `requests`. `held[key]` is how many cpus
// the process holds now; it only breaks ties (when cores cannot be split evenly the extra ones go
// to processes that already hold more at this level, then to smaller keys), which is what makes
// allocate() stable. `turns` changes who gets the odd cores (see OddCoreTurns); the default keeps
// the stable rule. Exposed for tests and for status output.
Shares computeShares(uint32_t capacity, const std::vector<ProcessRequest>& requests,
                     const std::map<ProcessKey, uint32_t>& held, const OddCoreTurns& turns = {});

// allocate() together with the shares it placed, with odd-core turns (see OddCoreTurns); with the
// default turns the grants equal allocate()'s. A plain value.
struct Allocation {
    Grants grants;
    Shares shares;
};
Allocation allocateDetailed(const Topology& managed, const std::vector<ProcessRequest>& requests,
                            const Grants& current, const OddCoreTurns& turns = {});

}  // namespace arbpolicy
