// Dense numbering of a topology's cpus, physical cores and sockets (internal), so placement works
// on small arrays instead of maps.
#pragma once

#include <vector>

#include "arbpolicy/topology.h"

namespace arbpolicy::detail {

// Built once per allocate() call from the managed topology; read-only afterwards. Cpu, core and
// socket indices are dense (0..n-1); cores and sockets are numbered in order of their lowest cpu
// id.
class MachineIndex {
  public:
    // A cpu id listed twice counts once (the first entry). A core is identified by (socket, core),
    // so per-socket core ids work as well as machine-wide ones.
    explicit MachineIndex(const Topology& topology);

    int cpus() const { return static_cast<int>(cpuIds_.size()); }
    int cores() const { return static_cast<int>(coreSocket_.size()); }
    int sockets() const { return sockets_; }

    int cpuId(int cpu) const { return cpuIds_[cpu]; }
    int coreOf(int cpu) const { return cpuCore_[cpu]; }
    int socketOf(int cpu) const { return coreSocket_[cpuCore_[cpu]]; }
    int socketOfCore(int core) const { return coreSocket_[core]; }
    // The cpu indices of `core`, ascending: [coreBegin(core), coreEnd(core)).
    const int* coreBegin(int core) const { return coreCpuList_.data() + coreStart_[core]; }
    const int* coreEnd(int core) const { return coreCpuList_.data() + coreStart_[core + 1]; }
    int coreSize(int core) const { return coreStart_[core + 1] - coreStart_[core]; }

    // The index of a managed cpu id, or -1 when the cpu is not managed.
    int indexOf(int cpuId) const;

  private:
    std::vector<int> cpuIds_;       // ascending, unique
    std::vector<int> cpuCore_;      // core index of each cpu index
    std::vector<int> coreSocket_;   // socket index of each core
    std::vector<int> coreStart_;    // cores() + 1 offsets into coreCpuList_
    std::vector<int> coreCpuList_;  // cpu indices grouped by core, ascending within a core
    int sockets_ = 0;
};

}  // namespace arbpolicy::detail
