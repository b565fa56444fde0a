// Topology from sysfs (or made up), and the small helpers around it.
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <map>
#include <utility>

#include "arbpolicy/topology.h"

namespace arbpolicy {
namespace {

// Reads a whole (small) sysfs file. Plain stdio: sysfs files are a page at most, and errno gives
// the reason for the error message.
std::optional<std::string> readFile(const std::string& path, std::string* error) {
    std::FILE* file = std::fopen(path.c_str(), "re");
    if (file == nullptr) {
        if (error) *error = "cannot read " + path + ": " + std::strerror(errno);
        return std::nullopt;
    }
    std::string text;
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) text.append(buffer, n);
    bool failed = std::ferror(file) != 0;
    int savedErrno = errno;
    std::fclose(file);
    if (failed) {
        if (error) *error = "cannot read " + path + ": " + std::strerror(savedErrno);
        return std::nullopt;
    }
    return text;
}

// One integer in a sysfs file ("3\n"); package ids may be -1 on machines that do not report them.
std::optional<int> readInt(const std::string& path, std::string* error) {
    std::optional<std::string> text = readFile(path, error);
    if (!text) return std::nullopt;
    std::string_view body = *text;
    while (!body.empty() && (body.back() == '\n' || body.back() == ' ')) body.remove_suffix(1);
    int value = 0;
    auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), value);
    if (body.empty() || ec != std::errc() || end != body.data() + body.size()) {
        if (error)
            *error = "malformed " + path + ": '" + std::string(body) + "' (expected an integer)";
        return std::nullopt;
    }
    return value;
}

// The cpus to describe: the caller's cpulist, or the kernel's online list when it gave none.
std::optional<std::vector<int>> selectedCpus(const std::string& cpuDir, const std::string& cpus,
                                             std::string* error) {
    if (!cpus.empty()) {
        std::optional<std::vector<int>> ids = parseCpuList(cpus);
        if (!ids && error) *error = "malformed cpu list '" + cpus + "' (expected e.g. 0-3,8)";
        return ids;
    }
    std::string path = cpuDir + "/online";
    std::optional<std::string> text = readFile(path, error);
    if (!text) return std::nullopt;
    std::optional<std::vector<int>> ids = parseCpuList(*text);
    if (!ids && error) *error = "malformed " + path + ": '" + *text + "' (expected a cpulist)";
    return ids;
}

}  // namespace

// sysfs numbers cores per package, so (package, core_id) pairs are renumbered densely in cpu order
// to give the machine-wide core ids the allocator groups siblings by.
std::optional<Topology> Topology::fromSysfs(const std::string& sysRoot, const std::string& cpus,
                                            std::string* error) {
    const std::string cpuDir = sysRoot + "/devices/system/cpu";
    std::optional<std::vector<int>> ids = selectedCpus(cpuDir, cpus, error);
    if (!ids) return std::nullopt;
    Topology topology;
    std::map<std::pair<int, int>, int> coreIds;
    for (int id : *ids) {
        const std::string dir = cpuDir + "/cpu" + std::to_string(id) + "/topology/";
        std::optional<int> socket = readInt(dir + "physical_package_id", error);
        if (!socket) return std::nullopt;
        std::optional<int> core = readInt(dir + "core_id", error);
        if (!core) return std::nullopt;
        auto [it, inserted] =
            coreIds.emplace(std::make_pair(*socket, *core), static_cast<int>(coreIds.size()));
        topology.cpus.push_back(Cpu{id, it->second, *socket});
    }
    return topology;
}

// Linux enumerates the first thread of every core, then the second thread of every core, ...
Topology Topology::synthetic(int sockets, int coresPerSocket, int threadsPerCore) {
    Topology topology;
    if (sockets <= 0 || coresPerSocket <= 0 || threadsPerCore <= 0) return topology;
    const int cores = sockets * coresPerSocket;
    for (int id = 0; id < cores * threadsPerCore; ++id) {
        int core = id % cores;
        topology.cpus.push_back(Cpu{id, core, core / coresPerSocket});
    }
    return topology;
}

// Convenience for callers that think in cpulists.
std::vector<int> Topology::ids() const {
    std::vector<int> out;
    out.reserve(cpus.size());
    for (const Cpu& cpu : cpus) out.push_back(cpu.id);
    return out;
}

}  // namespace arbpolicy
