// Backend names and `--backend auto` detection from the mount table.
#include <algorithm>

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

// cgroup v2 wins when its root offers the cpuset controller; else a v1 cpuset mount; else affinity.
// Every mount is looked at: favordynmods on any hierarchy counts (the kernel's lock is shared).
Detected detectBackend(Sys& sys, const std::string& procRoot) {
    std::string mountinfo;
    Detected result{BackendKind::kAffinity, ""};
    if (sys.readFile(procRoot + "/self/mountinfo", &mountinfo) != 0) return result;
    std::string v1Mount, v2Mount;
    for (const arbmounts::CgroupMount& m : arbmounts::parseCgroupMounts(mountinfo)) {
        if (m.favorDynmods) result.favorDynmods = true;
        if (m.version == 2) {
            std::string controllers;
            if (v2Mount.empty() &&
                sys.readFile(m.mountPoint + "/cgroup.controllers", &controllers) == 0 &&
                controllers.find("cpuset") != std::string::npos)
                v2Mount = m.mountPoint;
        } else if (std::find(m.controllers.begin(), m.controllers.end(), "cpuset") !=
                   m.controllers.end()) {
            v1Mount = m.mountPoint;
        }
    }
    if (!v2Mount.empty()) {
        result.kind = BackendKind::kCgroupV2;
        result.cgroupRoot = v2Mount + "/arbrun";
    } else if (!v1Mount.empty()) {
        result.kind = BackendKind::kCgroupV1;
        result.cgroupRoot = v1Mount + "/arbrun";
    }
    return result;
}

}  // namespace arbd
