// MachineIndex: sort-based dense numbering (no maps: this runs on every allocation).
#include "machine_index.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace arbpolicy::detail {
namespace {

// Numbers the distinct keys densely, in order of the lowest index carrying each key: returns the
// group number of every index.
std::vector<int> numberGroups(const std::vector<std::pair<int, int>>& keyOf) {
    const int n = static_cast<int>(keyOf.size());
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return keyOf[a] != keyOf[b] ? keyOf[a] < keyOf[b] : a < b; });
    std::vector<int> group(n);
    std::vector<int> firstIndex;  // per group in key order: its lowest index
    for (int k = 0; k < n; ++k) {
        if (k == 0 || keyOf[order[k]] != keyOf[order[k - 1]]) firstIndex.push_back(order[k]);
        group[order[k]] = static_cast<int>(firstIndex.size()) - 1;
    }
    std::vector<int> byFirst(firstIndex.size());
    std::iota(byFirst.begin(), byFirst.end(), 0);
    std::sort(byFirst.begin(), byFirst.end(),
              [&](int a, int b) { return firstIndex[a] < firstIndex[b]; });
    std::vector<int> renumber(firstIndex.size());
    for (size_t r = 0; r < byFirst.size(); ++r) renumber[byFirst[r]] = static_cast<int>(r);
    for (int& g : group) g = renumber[g];
    return group;
}

}  // namespace

// Sorts and dedups the cpus, numbers sockets and cores, then lays the cores' cpus out flat.
MachineIndex::MachineIndex(const Topology& topology) {
    std::vector<Cpu> sorted = topology.cpus;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const Cpu& a, const Cpu& b) { return a.id < b.id; });
    sorted.erase(std::unique(sorted.begin(), sorted.end(),
                             [](const Cpu& a, const Cpu& b) { return a.id == b.id; }),
                 sorted.end());
    std::vector<std::pair<int, int>> socketKey, coreKey;
    for (const Cpu& cpu : sorted) {
        cpuIds_.push_back(cpu.id);
        socketKey.emplace_back(cpu.socket, 0);
        coreKey.emplace_back(cpu.socket, cpu.core);
    }
    std::vector<int> cpuSocket = numberGroups(socketKey);
    cpuCore_ = numberGroups(coreKey);
    int coreCount = cpuCore_.empty() ? 0 : *std::max_element(cpuCore_.begin(), cpuCore_.end()) + 1;
    sockets_ = cpuSocket.empty() ? 0 : *std::max_element(cpuSocket.begin(), cpuSocket.end()) + 1;
    coreSocket_.assign(coreCount, 0);
    coreStart_.assign(coreCount + 1, 0);
    for (int cpu = 0; cpu < cpus(); ++cpu) {
        coreSocket_[cpuCore_[cpu]] = cpuSocket[cpu];
        ++coreStart_[cpuCore_[cpu] + 1];
    }
    std::partial_sum(coreStart_.begin(), coreStart_.end(), coreStart_.begin());
    coreCpuList_.resize(cpus());
    std::vector<int> fill(coreStart_.begin(), coreStart_.end() - 1);
    for (int cpu = 0; cpu < cpus(); ++cpu) coreCpuList_[fill[cpuCore_[cpu]]++] = cpu;
}

// Binary search: the ids are sorted, and a dense id table would trust ids to be small.
int MachineIndex::indexOf(int cpuId) const {
    auto it = std::lower_bound(cpuIds_.begin(), cpuIds_.end(), cpuId);
    return it != cpuIds_.end() && *it == cpuId ? static_cast<int>(it - cpuIds_.begin()) : -1;
}

}  // namespace arbpolicy::detail
