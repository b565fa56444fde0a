// The managed machine's cpus and how they group into physical cores and sockets, plus the kernel's
// cpulist text format. Pure data: read once (from sysfs or made up for tests), then only read.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arbpolicy {

// One logical cpu. Hyperthread siblings share `core`, a machine-wide physical core id (sysfs core
// ids are per socket; Topology makes them machine-wide). `socket` is the physical package id. A
// plain value.
struct Cpu {
    int id;
    int core;
    int socket;
};

// A set of cpus with their core/socket structure. Plain value: built by fromSysfs() or synthetic(),
// never mutated by this library afterwards; safe to share read-only between threads.
struct Topology {
    std::vector<Cpu> cpus;  // sorted by id, ids unique

    // Reads /sys/devices/system/cpu/cpuN/topology/{physical_package_id,core_id} under `sysRoot`
    // (default "/sys") for the cpus in `cpus` (a kernel cpulist such as "0-3,8"; empty = the
    // devices/system/cpu/online list). Core ids become machine-wide: each distinct (package,
    // core_id) pair gets its own id, numbered in order of the lowest cpu id on it. Returns nullopt
    // and sets *error (when error is not null) on a missing or malformed file or cpulist.
    static std::optional<Topology> fromSysfs(const std::string& sysRoot, const std::string& cpus,
                                             std::string* error);

    // A made-up machine for tests and the fake backend: sockets x coresPerSocket x threadsPerCore
    // cpus numbered like Linux does: cpu id i is thread i / (sockets*coresPerSocket) of physical
    // core i % (sockets*coresPerSocket), so the siblings of id are id + k*sockets*coresPerSocket;
    // core c is on socket c / coresPerSocket. Non-positive arguments give an empty topology.
    static Topology synthetic(int sockets, int coresPerSocket, int threadsPerCore);

    // The cpu ids, ascending (convenience for formatting and set arithmetic).
    std::vector<int> ids() const;
};

// Parses a kernel cpulist ("0-3,8,10-11", surrounding whitespace and a trailing newline allowed, ""
// = no cpus). Returns the ids sorted and without duplicates, or nullopt on malformed input (empty
// element, reversed range, sign, non-digit, id above kMaxCpuId).
std::optional<std::vector<int>> parseCpuList(std::string_view text);

// The inverse: ids (any order, duplicates and negative ids ignored) as the shortest cpulist, e.g.
// {0,1,2,3,8} -> "0-3,8"; no cpus -> "".
std::string formatCpuList(const std::vector<int>& cpus);

// The largest cpu id parseCpuList accepts (far above the kernel's NR_CPUS; bounds memory on bad
// input).
constexpr int kMaxCpuId = 65535;

}  // namespace arbpolicy
