// mountinfo(5): "id parent major:minor root mountpoint options [optional...] - fstype source
// superoptions". The optional fields vary in number, so the type is found after the " - ".
#include "arbmounts/cgroup_mounts.h"

#include <algorithm>
#include <sstream>

namespace arbmounts {
namespace {

// The kernel writes space, tab, newline and backslash in paths as \ooo.
std::string decodeOctal(std::string_view text) {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\\' && i + 3 < text.size() &&
            text.substr(i + 1, 3).find_first_not_of("01234567") == std::string_view::npos) {
            out += char((text[i + 1] - '0') * 64 + (text[i + 2] - '0') * 8 + (text[i + 3] - '0'));
            i += 3;
        } else {
            out += text[i];
        }
    }
    return out;
}

// Comma-separated fields of the super options; for a v1 hierarchy the controllers are among them
// (beside rw, name=..., and other flags, which are harmless to keep).
std::vector<std::string> splitOptions(const std::string& options) {
    std::vector<std::string> out;
    std::istringstream in(options);
    for (std::string item; std::getline(in, item, ',');) {
        if (!item.empty()) out.push_back(item);
    }
    return out;
}

// One line, or false when it is not a cgroup mount (or not a mountinfo line at all).
bool parseLine(const std::string& line, CgroupMount* mount) {
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) return false;
    std::istringstream head(line.substr(0, dash)), tail(line.substr(dash + 3));
    std::string id, parent, device, root, mountPoint, fsType, source, superOptions;
    if (!(head >> id >> parent >> device >> root >> mountPoint)) return false;
    if (!(tail >> fsType >> source)) return false;
    tail >> superOptions;
    if (fsType != "cgroup" && fsType != "cgroup2") return false;
    mount->version = fsType == "cgroup2" ? 2 : 1;
    mount->mountPoint = decodeOctal(mountPoint);
    const std::vector<std::string> options = splitOptions(superOptions);
    mount->favorDynmods =
        std::find(options.begin(), options.end(), "favordynmods") != options.end();
    mount->controllers = mount->version == 1 ? options : std::vector<std::string>{};
    return true;
}

}  // namespace

// Line by line: a bad line (or a truncated last one) costs only itself.
std::vector<CgroupMount> parseCgroupMounts(std::string_view mountinfo) {
    std::vector<CgroupMount> mounts;
    std::istringstream in{std::string(mountinfo)};
    for (std::string line; std::getline(in, line);) {
        CgroupMount mount;
        if (parseLine(line, &mount)) mounts.push_back(std::move(mount));
    }
    return mounts;
}

bool listsController(std::string_view text, std::string_view name) {
    std::istringstream in{std::string(text)};
    for (std::string word; in >> word;) {
        if (word == name) return true;
    }
    return false;
}

CpusetLayout cpusetLayout(
    const std::vector<CgroupMount>& mounts,
    const std::function<std::optional<std::string>(const std::string&)>& readFile) {
    CpusetLayout layout;
    for (const CgroupMount& m : mounts) {
        if (m.favorDynmods && layout.favoring.empty()) layout.favoring = m.mountPoint;
        if (m.version == 1) {
            if (layout.v1Cpuset.empty() && std::find(m.controllers.begin(), m.controllers.end(),
                                                     "cpuset") != m.controllers.end()) {
                layout.v1Cpuset = m.mountPoint;
            }
            continue;
        }
        if (layout.v2.empty()) layout.v2 = m.mountPoint;
        if (layout.v2Cpuset.empty()) {
            const std::optional<std::string> controllers =
                readFile(m.mountPoint + "/cgroup.controllers");
            if (controllers && listsController(*controllers, "cpuset"))
                layout.v2Cpuset = m.mountPoint;
        }
    }
    return layout;
}

}  // namespace arbmounts
