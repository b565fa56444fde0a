// Helpers shared by the allocation tests: request builders and an independent checker of the
// allocation rules (it re-derives per-level grants from the result instead of trusting the code
// under test).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "arbpolicy/allocation.h"

namespace arbpolicy::testing {

// A request for `key` asking {level, cores} pairs.
inline ProcessRequest request(ProcessKey key, std::vector<std::pair<int, uint32_t>> asks,
                              uint32_t minCores = 0, uint32_t maxCores = UINT32_MAX) {
    ProcessRequest r;
    r.key = key;
    for (auto [level, cores] : asks) r.requested[level] += cores;
    r.minCores = minCores;
    r.maxCores = maxCores;
    return r;
}

// Cores a request can use at all: its total, capped by maxCores.
inline uint64_t usable(const ProcessRequest& r) {
    uint64_t sum = 0;
    for (uint32_t n : r.requested) sum += n;
    return std::min<uint64_t>(sum, r.maxCores);
}

// The minimum the allocator honours: minCores capped by what the process can use.
inline uint64_t effectiveMin(const ProcessRequest& r) {
    return std::min<uint64_t>(r.minCores, usable(r));
}

// Splits a process's total over levels the way level-by-level serving must have: highest first.
inline std::vector<uint64_t> attribute(const ProcessRequest& r, uint64_t total) {
    std::vector<uint64_t> perLevel(kPriorityLevels, 0);
    uint64_t given = 0;
    for (int level = 0; level < kPriorityLevels; ++level) {
        uint64_t demand = std::min<uint64_t>(r.requested[level],
                                             r.maxCores - std::min<uint64_t>(given, r.maxCores));
        perLevel[level] = std::min(demand, total - given);
        given += perLevel[level];
    }
    return perLevel;
}

// The level-`level` demand of r given what higher levels gave it.
inline uint64_t demandAt(const ProcessRequest& r, const std::vector<uint64_t>& perLevel,
                         int level) {
    uint64_t above = 0;
    for (int l = 0; l < level; ++l) above += perLevel[l];
    return std::min<uint64_t>(r.requested[level],
                              r.maxCores - std::min<uint64_t>(above, r.maxCores));
}

// First occurrence of each key (what the allocator honours).
inline std::map<ProcessKey, ProcessRequest> distinct(const std::vector<ProcessRequest>& requests) {
    std::map<ProcessKey, ProcessRequest> out;
    for (const ProcessRequest& r : requests) out.emplace(r.key, r);
    return out;
}

// Checks every rule that can be checked from the result alone. Returns "" or what is wrong.
inline std::string checkAllocation(const Topology& topology,
                                   const std::vector<ProcessRequest>& requests,
                                   const Grants& grants) {
    std::ostringstream problems;
    std::set<int> managed;
    for (const Cpu& cpu : topology.cpus) managed.insert(cpu.id);
    std::map<ProcessKey, ProcessRequest> byKey = distinct(requests);
    std::set<int> used;
    uint64_t granted = 0;
    for (const auto& [key, cpus] : grants) {
        if (!byKey.count(key)) problems << "grant for unknown process " << key << "\n";
        if (!std::is_sorted(cpus.begin(), cpus.end()))
            problems << "unsorted cpus of " << key << "\n";
        for (int id : cpus) {
            if (!managed.count(id)) problems << "cpu " << id << " outside topology\n";
            if (!used.insert(id).second) problems << "cpu " << id << " granted twice\n";
        }
        granted += cpus.size();
    }
    std::map<ProcessKey, std::vector<uint64_t>> perLevel;
    std::set<ProcessKey> dropped;
    for (const auto& [key, r] : byKey) {
        auto it = grants.find(key);
        if (it == grants.end()) {
            problems << "process " << key << " missing from grants\n";
            continue;
        }
        uint64_t total = it->second.size();
        if (total > usable(r)) problems << "process " << key << " got " << total << " > usable\n";
        if (total > 0 && total < effectiveMin(r)) problems << "process " << key << " below min\n";
        if (total == 0 && effectiveMin(r) > 0) dropped.insert(key);
        perLevel[key] = attribute(r, total);
    }
    // Strict priority and even split, level by level, among processes not dropped for their
    // minimum.
    bool exhausted = false;
    for (int level = 0; level < kPriorityLevels; ++level) {
        uint64_t lowestUnsatisfied = UINT64_MAX;
        uint64_t highest = 0;
        for (const auto& [key, r] : byKey) {
            if (dropped.count(key) || !perLevel.count(key)) continue;
            uint64_t got = perLevel[key][level];
            if (exhausted && got > 0) {
                problems << "process " << key << " got cores at level " << level
                         << " while a higher level was short\n";
            }
            if (got < demandAt(r, perLevel[key], level))
                lowestUnsatisfied = std::min(lowestUnsatisfied, got);
            highest = std::max(highest, got);
        }
        if (lowestUnsatisfied != UINT64_MAX && highest > lowestUnsatisfied + 1) {
            problems << "uneven split at level " << level << ": " << lowestUnsatisfied << " vs "
                     << highest << "\n";
        }
        if (lowestUnsatisfied != UINT64_MAX) exhausted = true;
    }
    if (exhausted && granted < managed.size()) {
        problems << "a process is short but " << managed.size() - granted << " cpus are idle\n";
    }
    return problems.str();
}

// What `current` validly gives each process in `requests` (managed cpus, first claim by key order).
inline Grants validHeld(const Topology& topology, const std::vector<ProcessRequest>& requests,
                        const Grants& current) {
    std::set<int> managed;
    for (const Cpu& cpu : topology.cpus) managed.insert(cpu.id);
    std::map<ProcessKey, ProcessRequest> byKey = distinct(requests);
    std::set<int> taken;
    Grants held;
    for (const auto& [key, cpus] : current) {
        if (!byKey.count(key)) continue;
        for (int id : cpus) {
            if (managed.count(id) && taken.insert(id).second) held[key].push_back(id);
        }
    }
    return held;
}

// Stability: relative to what each process validly held, an unchanged count keeps exactly the same
// cpus, a smaller one keeps a subset, a larger one a superset. Returns "" or what is wrong.
inline std::string checkStability(const Topology& topology,
                                  const std::vector<ProcessRequest>& requests,
                                  const Grants& current, const Grants& next) {
    std::ostringstream problems;
    Grants held = validHeld(topology, requests, current);
    for (const auto& [key, cpus] : next) {
        std::vector<int> before = held.count(key) ? held[key] : std::vector<int>{};
        std::sort(before.begin(), before.end());
        const std::vector<int>& smaller = before.size() <= cpus.size() ? before : cpus;
        const std::vector<int>& larger = before.size() <= cpus.size() ? cpus : before;
        if (!std::includes(larger.begin(), larger.end(), smaller.begin(), smaller.end())) {
            problems << "process " << key << " moved cpus (" << before.size() << " -> "
                     << cpus.size() << ")\n";
        }
    }
    return problems.str();
}

// Grants as text for failure messages.
inline std::string describe(const Grants& grants) {
    std::ostringstream out;
    for (const auto& [key, cpus] : grants) out << key << ":" << formatCpuList(cpus) << " ";
    return out.str();
}

// Requests as text for failure messages: key[level:count ...] min max.
inline std::string describe(const std::vector<ProcessRequest>& requests) {
    std::ostringstream out;
    for (const ProcessRequest& r : requests) {
        out << r.key << "[";
        for (int level = 0; level < kPriorityLevels; ++level) {
            if (r.requested[level] > 0) out << " " << level << ":" << r.requested[level];
        }
        out << " ] min " << r.minCores << " max " << r.maxCores << "\n";
    }
    return out.str();
}

}  // namespace arbpolicy::testing
