// The cgroup file systems in a /proc/<pid>/mountinfo text (pure parsing, unit-tested): the one
// parser of the mount table, for the core arbiter's backend detection and for arbrun doctor.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arbmounts {

// One mounted cgroup hierarchy.
struct CgroupMount {
    int version = 1;                       // 1: "cgroup", 2: "cgroup2"
    std::string mountPoint;                // octal escapes (\040) decoded
    std::vector<std::string> controllers;  // v1: the controllers in its super options (cpuset, ...)
    // "favordynmods" among its super options (Linux 6.0+): the kernel's lock for moving threads
    // between cgroups then never waits for an RCU grace period (a lock shared by all hierarchies).
    bool favorDynmods = false;
};

// Every line of type cgroup or cgroup2, in the file's order. Malformed lines are skipped.
std::vector<CgroupMount> parseCgroupMounts(std::string_view mountinfo);

// Whether `name` is a whole word of a cgroup.controllers or cgroup.subtree_control text
// ("cpuset cpu io\n").
bool listsController(std::string_view text, std::string_view name);

// What a mount table offers the arbiter's cpuset backends. core-arbiter --backend auto takes the
// v2 hierarchy when `v2Cpuset` is set, else the v1 one when `v1Cpuset` is, else affinity; arbrun
// doctor reports the same choice from the same fields.
struct CpusetLayout {
    std::string v1Cpuset;  // the first v1 hierarchy with the cpuset controller
    std::string v2;        // the first cgroup2 mount
    std::string v2Cpuset;  // the first cgroup2 mount whose cgroup.controllers lists cpuset
    std::string favoring;  // the first mount with favordynmods (the kernel's lock is shared)
};
// `readFile(path)` gives a file's text, nullopt when it cannot be read; it is asked only for
// cgroup2 mounts' cgroup.controllers, until one lists cpuset.
CpusetLayout cpusetLayout(
    const std::vector<CgroupMount>& mounts,
    const std::function<std::optional<std::string>(const std::string&)>& readFile);

}  // namespace arbmounts
