// The cgroup file systems in a /proc/<pid>/mountinfo text (pure parsing, unit-tested): the one
// parser of the mount table, for the core arbiter's backend detection and for arbrun doctor.
#pragma once

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

}  // namespace arbmounts
