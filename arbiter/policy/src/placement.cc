// The placing half of the allocation policy: keep what is held, shrink without moving, grow next to
// what is held (siblings, then the same socket), whole cores for whole-core needs.
#include "placement.h"

#include <algorithm>
#include <numeric>

namespace arbpolicy::detail {

// Everything starts free; slots are created in `keys` order (ascending).
Placer::Placer(const MachineIndex& machine, const std::vector<ProcessKey>& keys)
    : m_(machine),
      owner_(machine.cpus(), -1),
      coreFree_(machine.cores()),
      socketFree_(machine.sockets(), 0) {
    for (int core = 0; core < machine.cores(); ++core) {
        coreFree_[core] = machine.coreSize(core);
        socketFree_[machine.socketOfCore(core)] += coreFree_[core];
    }
    slots_.reserve(keys.size());
    for (ProcessKey key : keys) slots_.push_back(Slot{key, 0, {}});
}

// Walks `current` in key order, so a cpu listed twice stays with the smaller key; slots_ is in key
// order too, so matching keys is one merge pass.
std::vector<uint32_t> Placer::adopt(const Grants& current) {
    auto slot = slots_.begin();
    for (const auto& [key, cpus] : current) {
        while (slot != slots_.end() && slot->key < key) ++slot;
        if (slot == slots_.end()) break;
        if (slot->key != key) continue;
        for (int id : cpus) {
            int cpu = m_.indexOf(id);
            if (cpu >= 0 && owner_[cpu] < 0) claim(static_cast<int>(slot - slots_.begin()), cpu);
        }
    }
    std::vector<uint32_t> held;
    held.reserve(slots_.size());
    for (const Slot& s : slots_) held.push_back(static_cast<uint32_t>(s.held.size()));
    return held;
}

// Shrinking first frees cpus for the growers; growers go biggest need first (stable, so equal
// needs go by key).
Grants Placer::place(const std::vector<uint32_t>& targets) {
    const int count = static_cast<int>(slots_.size());
    for (int slot = 0; slot < count; ++slot) slots_[slot].target = targets[slot];
    for (int slot = 0; slot < count; ++slot) shrink(slot);
    std::vector<int> order(count);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [this](int a, int b) { return need(a) > need(b); });
    for (int slot : order) grow(slot);
    return result();
}

// Cpus the slot still lacks.
uint32_t Placer::need(int slot) const {
    const Slot& s = slots_[slot];
    return s.target > s.held.size() ? s.target - static_cast<uint32_t>(s.held.size()) : 0;
}

// Ownership changes go through these two so the free counts stay right.
void Placer::claim(int slot, int cpu) {
    owner_[cpu] = slot;
    slots_[slot].held.push_back(cpu);
    --coreFree_[m_.coreOf(cpu)];
    --socketFree_[m_.socketOf(cpu)];
}
void Placer::release(int slot, int cpu) {
    owner_[cpu] = -1;
    std::vector<int>& held = slots_[slot].held;
    held.erase(std::find(held.begin(), held.end(), cpu));
    ++coreFree_[m_.coreOf(cpu)];
    ++socketFree_[m_.socketOf(cpu)];
}

// How many cpus of `slot` are on each socket, and on one core.
std::vector<int> Placer::heldPerSocket(int slot) const {
    std::vector<int> perSocket(m_.sockets(), 0);
    for (int cpu : slots_[slot].held) ++perSocket[m_.socketOf(cpu)];
    return perSocket;
}
int Placer::heldOnCore(int slot, int core) const {
    return static_cast<int>(std::count_if(m_.coreBegin(core), m_.coreEnd(core),
                                          [&](int cpu) { return owner_[cpu] == slot; }));
}

// Gives back cpus until the slot is at its target; the kept cpus stay where they are.
void Placer::shrink(int slot) {
    while (slots_[slot].held.size() > slots_[slot].target) release(slot, releaseVictim(slot));
}

// The cpu to give back first: on the socket where the process holds fewest (so it converges on one
// socket), a lone hyperthread before half of a whole core (so it keeps whole cores), then the
// highest id.
int Placer::releaseVictim(int slot) const {
    std::vector<int> perSocket = heldPerSocket(slot);
    int best = -1;
    Score bestScore{};
    for (int cpu : slots_[slot].held) {
        bool lone = heldOnCore(slot, m_.coreOf(cpu)) == 1;
        Score score{perSocket[m_.socketOf(cpu)], lone ? 0 : 1, -m_.cpuId(cpu), 0, 0, 0};
        if (best < 0 || score < bestScore) {
            best = cpu;
            bestScore = score;
        }
    }
    return best;
}

// Takes free cpus, one core at a time, until the slot is at its target.
void Placer::grow(int slot) {
    uint32_t wanted = need(slot);
    if (wanted == 0) return;
    std::vector<int> rank = socketRanks(slot, wanted);
    while (wanted > 0) {
        int core = bestCore(slot, rank, wanted);
        if (core < 0) return;  // nothing free: the counts were inconsistent; give what exists
        for (const int* cpu = m_.coreBegin(core); cpu != m_.coreEnd(core) && wanted > 0; ++cpu) {
            if (owner_[*cpu] < 0) {
                claim(slot, *cpu);
                --wanted;
            }
        }
    }
}

// Socket preference for a growing process (rank 0 = most preferred): the sockets it is on, most
// held first; then sockets where the rest of its need fits, tightest first (best fit keeps big free
// areas for big processes); then the others, most free first.
std::vector<int> Placer::socketRanks(int slot, uint32_t wanted) const {
    std::vector<int> held = heldPerSocket(slot);
    long left = static_cast<long>(wanted);
    for (int s = 0; s < m_.sockets(); ++s) {
        if (held[s] > 0) left -= socketFree_[s];
    }
    auto key = [&](int s) -> Score {
        if (held[s] > 0) return {0, -held[s], -socketFree_[s], s, 0, 0};
        if (socketFree_[s] >= left) return {1, socketFree_[s], s, 0, 0, 0};
        return {2, -socketFree_[s], s, 0, 0, 0};
    };
    std::vector<int> order(m_.sockets());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return key(a) < key(b); });
    std::vector<int> rank(m_.sockets());
    for (int i = 0; i < m_.sockets(); ++i) rank[order[i]] = i;
    return rank;
}

// The core to take cpus from next: one whose sibling the process holds; then by socket rank; then
// one whose free cpus it can use up entirely, the most of them first (whole cores when it needs a
// core or more, leftover single hyperthreads when it needs less); else the one that leaves the
// smallest leftover; then fewer other owners; then the lowest cpu ids. -1 when none is free.
int Placer::bestCore(int slot, const std::vector<int>& rank, uint32_t wanted) const {
    int best = -1;
    Score bestScore{};
    for (int core = 0; core < m_.cores(); ++core) {
        long free = coreFree_[core];
        if (free == 0) continue;
        long mine = heldOnCore(slot, core);
        long others = m_.coreSize(core) - free - mine;
        bool fits = free <= static_cast<long>(wanted);
        Score score{mine > 0 ? 0 : 1, rank[m_.socketOfCore(core)],
                    fits ? 0 : 1,     fits ? -free : free,
                    others,           core};
        if (best < 0 || score < bestScore) {
            best = core;
            bestScore = score;
        }
    }
    return best;
}

// The placement as cpu ids, sorted, one entry per slot (possibly empty).
Grants Placer::result() const {
    Grants grants;
    for (const Slot& slot : slots_) {
        std::vector<int> ids;
        ids.reserve(slot.held.size());
        for (int cpu : slot.held) ids.push_back(m_.cpuId(cpu));
        std::sort(ids.begin(), ids.end());
        grants.emplace_hint(grants.end(), slot.key, std::move(ids));
    }
    return grants;
}

}  // namespace arbpolicy::detail
