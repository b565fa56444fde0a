// The placing half of the allocation policy (internal): which cpus each process gets, given how
// many it gets and what it holds now.
#pragma once

#include <array>
#include <vector>

#include "arbpolicy/allocation.h"
#include "machine_index.h"

namespace arbpolicy::detail {

// One placement: adopt what processes hold now, then place() the new counts. Used by one
// allocate() call; single-threaded. Processes are the slots 0..n-1, in the order of `keys`.
class Placer {
  public:
    Placer(const MachineIndex& machine, const std::vector<ProcessKey>& keys);

    // Takes over what `current` validly gives each process: managed cpus only, each cpu once (a cpu
    // listed for two processes stays with the smaller key), entries for unknown keys ignored.
    // Returns how many cpus each slot holds.
    std::vector<uint32_t> adopt(const Grants& current);

    // Gives each slot exactly targets[slot] cpus (the caller keeps the sum within the machine),
    // keeping what it holds as far as its count allows: shrinks first, then grows the biggest
    // needs first so they find whole cores and sockets before small needs fragment them.
    Grants place(const std::vector<uint32_t>& targets);

  private:
    // Lexicographic preference key: smaller is better.
    using Score = std::array<long, 6>;

    // One process: its key, target count and the cpu indices it holds.
    struct Slot {
        ProcessKey key;
        uint32_t target = 0;
        std::vector<int> held;
    };

    uint32_t need(int slot) const;
    void claim(int slot, int cpu);
    void release(int slot, int cpu);
    std::vector<int> heldPerSocket(int slot) const;
    int heldOnCore(int slot, int core) const;
    void shrink(int slot);
    int releaseVictim(int slot) const;
    void grow(int slot);
    std::vector<int> socketRanks(int slot, uint32_t wanted) const;
    int bestCore(int slot, const std::vector<int>& rank, uint32_t wanted) const;
    Grants result() const;

    const MachineIndex& m_;
    std::vector<Slot> slots_;      // one per key, in key order
    std::vector<int> owner_;       // slot owning each cpu index, -1 = free
    std::vector<int> coreFree_;    // free cpus per core
    std::vector<int> socketFree_;  // free cpus per socket
};

}  // namespace arbpolicy::detail
