// Backend names and `--backend auto` detection from the mount table.
#include <sstream>

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
// Every line is read: favordynmods on any hierarchy counts (the kernel's lock is shared).
Detected detectBackend(Sys& sys, const std::string& procRoot) {
    std::string mounts;
    Detected result{BackendKind::kAffinity, ""};
    if (sys.readFile(procRoot + "/self/mounts", &mounts) != 0) return result;
    std::istringstream in(mounts);
    std::string line, v1Mount, v2Mount;
    while (std::getline(in, line)) {
        std::istringstream f(line);
        std::string dev, dir, type, opts;
        f >> dev >> dir >> type >> opts;
        if (type != "cgroup" && type != "cgroup2") continue;
        const std::string options = "," + opts + ",";
        if (options.find(",favordynmods,") != std::string::npos) result.favorDynmods = true;
        if (type == "cgroup2") {
            std::string controllers;
            if (v2Mount.empty() && sys.readFile(dir + "/cgroup.controllers", &controllers) == 0 &&
                controllers.find("cpuset") != std::string::npos)
                v2Mount = dir;
        } else if (options.find(",cpuset,") != std::string::npos) {
            v1Mount = dir;
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
