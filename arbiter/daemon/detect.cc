// Backend names and `--backend auto` detection from the mount table.
#include <optional>

#include "arbmounts/cgroup_mounts.h"
#include "backend.h"

namespace arbd {

const char* backendName(BackendKind kind) {
    switch (kind) {
        case BackendKind::kAuto:
            return "auto";
        case BackendKind::kCgroupV1:
            return "cgroup-v1";
        case BackendKind::kCgroupV2:
            return "cgroup-v2";
        case BackendKind::kAffinity:
            return "affinity";
        case BackendKind::kFake:
            return "fake";
    }
    return "?";
}

bool parseBackendKind(const std::string& text, BackendKind* kind) {
    for (auto k : {BackendKind::kAuto, BackendKind::kCgroupV1, BackendKind::kCgroupV2,
                   BackendKind::kAffinity, BackendKind::kFake}) {
        if (text == backendName(k)) {
            *kind = k;
            return true;
        }
    }
    return false;
}

// cgroup v2 wins when its root offers the cpuset controller; else a v1 cpuset mount; else affinity
// (arbmounts::cpusetLayout, which arbrun doctor reports from too).
Detected detectBackend(Sys& sys, const std::string& procRoot) {
    std::string mountinfo;
    Detected result{BackendKind::kAffinity, ""};
    if (sys.readFile(procRoot + "/self/mountinfo", &mountinfo) != 0) return result;
    const arbmounts::CpusetLayout layout =
        arbmounts::cpusetLayout(arbmounts::parseCgroupMounts(mountinfo),
                                [&sys](const std::string& path) -> std::optional<std::string> {
                                    std::string text;
                                    if (sys.readFile(path, &text) != 0) return std::nullopt;
                                    return text;
                                });
    result.favorDynmods = !layout.favoring.empty();
    if (!layout.v2Cpuset.empty()) {
        result.kind = BackendKind::kCgroupV2;
        result.cgroupRoot = layout.v2Cpuset + "/arbrun";
    } else if (!layout.v1Cpuset.empty()) {
        result.kind = BackendKind::kCgroupV1;
        result.cgroupRoot = layout.v1Cpuset + "/arbrun";
    }
    return result;
}

}  // namespace arbd
