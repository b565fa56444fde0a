#include "options.h"

#include <grp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>

#include "arbcli/parse.h"

namespace arbd {
namespace {

// ADDR (host:port, loopback only) versus PATH: anything with a '/' is a path.
bool splitMetrics(const std::string& value, std::string* path, std::string* addr,
                  std::string* error) {
    if (value.empty()) return true;
    if (value.find('/') != std::string::npos) {
        *path = value;
        return true;
    }
    auto colon = value.rfind(':');
    std::string host = colon == std::string::npos ? "" : value.substr(0, colon);
    std::string port = colon == std::string::npos ? "" : value.substr(colon + 1);
    bool loopback = host == "localhost" || host == "[::1]" || host.rfind("127.", 0) == 0;
    bool numeric = !port.empty() && port.size() <= 5 &&
                   std::all_of(port.begin(), port.end(), ::isdigit) && std::stoi(port) <= 65535;
    if (!loopback || !numeric) {
        *error = "--metrics: '" + value +
                 "' is neither a file path (with a '/') nor a loopback address like 127.0.0.1:9464";
        return false;
    }
    *addr = value;
    return true;
}

// --cpus, or the arbiter's own affinity; ids must fit the release page.
bool resolveCpus(const Options& o, Sys& sys, std::vector<int>* all, std::string* error) {
    if (!o.cpus.empty()) {
        auto parsed = arbpolicy::parseCpuList(o.cpus);
        if (!parsed || parsed->empty()) {
            *error = "--cpus: cannot parse '" + o.cpus + "' (expected e.g. 0-7,16)";
            return false;
        }
        *all = *parsed;
    } else if (int e = sys.getAffinity(0, all)) {
        *error = sysError("sched_getaffinity", "self", e);
        return false;
    }
    if (all->back() >= arbproto::kMaxCoreIds) {
        *error = "--cpus: cpu ids must be below " + std::to_string(arbproto::kMaxCoreIds);
        return false;
    }
    return true;
}

// Topology from sysfs; cpus sysfs does not know (fake machines) get one core and socket 0 each.
arbpolicy::Topology managedTopology(const Options& o, const std::vector<int>& managed) {
    std::string why;
    auto topo =
        arbpolicy::Topology::fromSysfs(o.sysfsRoot, arbpolicy::formatCpuList(managed), &why);
    if (topo && topo->cpus.size() == managed.size()) return *topo;
    arbpolicy::Topology flat;
    for (int c : managed) flat.cpus.push_back({c, c, 0});
    return flat;
}

}  // namespace

// Every option is documented in --help; errors are one line, exit status 2.
int parseOptions(int argc, char** argv, Options* o) {
    CLI::App app{
        "core-arbiter: divides a machine's cores between processes by priority.\n"
        "Clients (libarbclient) connect over a Unix socket; see arbiter/PROTOCOL.md.",
        "core-arbiter"};
    app.add_option("--socket", o->socketPath, "Unix socket clients connect to (mode 0660)")
        ->capture_default_str();
    app.add_option("--backend", o->backend,
                   "How threads are placed: auto (cgroup v2 or v1 if mounted, else affinity), "
                   "cgroup-v1, cgroup-v2, affinity, fake (records operations under --cgroup-root, "
                   "pins nothing)")
        ->check(CLI::IsMember({"auto", "cgroup-v1", "cgroup-v2", "affinity", "fake"}))
        ->capture_default_str();
    app.add_option("--cgroup-root", o->cgroupRoot,
                   "Directory the cpuset/fake backends work under (default: <cpuset mount>/arbrun; "
                   "required for fake)");
    app.add_option("--cpus", o->cpus,
                   "CPUs the arbiter uses, e.g. 0-15 (default: the arbiter's own affinity; with "
                   "fake, any list, e.g. 0-255)");
    app.add_option("--reserve", o->reserve, "CPUs (the lowest of --cpus) that stay unmanaged, >= 1")
        ->check(CLI::Range(1, arbproto::kMaxCoreIds))
        ->capture_default_str();
    app.add_option("--config", o->configPath, "Limits file: priority and core caps per user/group");
    app.add_option("--release-timeout", o->releaseTimeoutMs,
                   "Milliseconds a process has to release a core before it is taken (forced)")
        ->check(CLI::Range(1, 60000))
        ->capture_default_str();
    app.add_option("--release-poll", o->releasePollUs,
                   "Microseconds the arbiter looks for a release's acknowledgement without "
                   "sleeping (yielding its CPU between looks) after asking for a core back: a "
                   "faster hand-over for at most this much CPU per release; 0 = sleep at once")
        ->check(CLI::Range(0, 10000))
        ->capture_default_str();
    app.add_option("--nice", o->nice,
                   "Niceness the arbiter sets for itself at start, -20..19: it shares the "
                   "unmanaged cpus with everything else, and a core changes hands only as fast "
                   "as it runs; lowering it needs CAP_SYS_NICE (without, the arbiter keeps its "
                   "own and says so)")
        ->check(CLI::Range(-20, 19))
        ->capture_default_str();
    app.add_option("--metrics", o->metrics,
                   "Prometheus metrics: a file PATH rewritten every second, or a loopback ADDR "
                   "(127.0.0.1:9464) served over HTTP");
    app.add_option("--log-level", o->logLevel, "error, warn, info or debug")
        ->check(CLI::IsMember({"error", "warn", "info", "debug"}))
        ->capture_default_str();
    app.add_flag("--adopt-all-processes", o->adoptAll,
                 "Production only: move every task of the cgroup root's parent into the unmanaged "
                 "set at start, so managed cores run nothing else; on cgroup v2 the root also "
                 "becomes a cpuset partition over --cpus (leave one cpu out for the rest of the "
                 "machine)");
    app.add_option("--socket-group", o->socketGroup, "Group allowed to connect to the socket");
    app.add_option("--readopt-timeout", o->readoptTimeoutMs,
                   "Milliseconds a restarted arbiter waits for clients to reclaim the cores a "
                   "crashed one left them")
        ->check(CLI::Range(0, 600000))
        ->capture_default_str();
    app.add_option("--share-period", o->sharePeriodMs,
                   "Milliseconds between hand-overs of a core that does not divide evenly among "
                   "processes of the same priority (e.g. 3 cores, 2 processes asking for 3: the "
                   "third core takes turns); 0 = never, the process holding it keeps it")
        ->check(CLI::Range(0, 60000))
        ->capture_default_str();
    app.add_option("--sysfs-root", o->sysfsRoot, "Where sysfs is (topology)")
        ->capture_default_str();
    app.add_option("--proc-root", o->procRoot, "Where procfs is")->capture_default_str();
    if (std::optional<int> status = arbcli::parse(app, argc, argv, "core-arbiter")) return *status;
    return -1;
}

// Used at start and on SIGHUP.
std::optional<arbpolicy::LimitsConfig> loadLimits(Sys& sys, const std::string& path,
                                                  std::string* error) {
    std::string text;
    if (int e = sys.readFile(path, &text)) {
        *error = sysError("read", path, e);
        return std::nullopt;
    }
    std::string why;
    auto limits = arbpolicy::LimitsConfig::parse(text, &why);
    if (!limits) *error = path + ": " + why;
    return limits;
}

// Machine-dependent defaults and cross-option checks (reserve vs cpus, fake needs a root).
bool resolveOptions(const Options& o, Sys& sys, Settings* s, std::string* error) {
    BackendKind kind;
    parseBackendKind(o.backend, &kind);
    parseLogLevel(o.logLevel, &s->logLevel);
    Detected detected = detectBackend(sys, o.procRoot);
    if (kind == BackendKind::kAuto) kind = detected.kind;
    s->favorDynmods = detected.favorDynmods;
    s->backend.kind = kind;
    s->backend.root = o.cgroupRoot;
    if (s->backend.root.empty()) {
        if (kind == BackendKind::kFake) {
            *error = "--backend fake needs --cgroup-root DIR";
            return false;
        }
        if (kind == BackendKind::kCgroupV1 || kind == BackendKind::kCgroupV2) {
            if (detected.kind != kind) {
                *error = std::string("no ") + backendName(kind) +
                         " cpuset hierarchy is mounted; give --cgroup-root";
                return false;
            }
            s->backend.root = detected.cgroupRoot;
        }
    }
    while (s->backend.root.size() > 1 && s->backend.root.back() == '/') s->backend.root.pop_back();
    if (!resolveCpus(o, sys, &s->backend.all, error)) return false;
    if (static_cast<size_t>(o.reserve) >= s->backend.all.size()) {
        *error = "--reserve " + std::to_string(o.reserve) + " leaves none of the " +
                 std::to_string(s->backend.all.size()) + " cpus to manage";
        return false;
    }
    s->backend.managed.assign(s->backend.all.begin() + o.reserve, s->backend.all.end());
    s->backend.adoptAll = o.adoptAll;
    s->backend.procRoot = o.procRoot;
    if (kind == BackendKind::kFake) s->backend.returnDir = s->backend.root;
    s->managed = managedTopology(o, s->backend.managed);
    if (!o.configPath.empty()) {
        s->limits = loadLimits(sys, o.configPath, error);
        if (!s->limits) return false;
    }
    s->releaseTimeout = std::chrono::milliseconds(o.releaseTimeoutMs);
    s->releasePoll = std::chrono::microseconds(o.releasePollUs);
    s->nice = o.nice;
    s->readoptTimeout = std::chrono::milliseconds(o.readoptTimeoutMs);
    s->sharePeriod = std::chrono::milliseconds(o.sharePeriodMs);
    s->socketPath = o.socketPath;
    if (!o.socketGroup.empty()) {
        group* g = getgrnam(o.socketGroup.c_str());
        if (!g) {
            *error = "--socket-group: no group named '" + o.socketGroup + "'";
            return false;
        }
        s->socketGroup = static_cast<int>(g->gr_gid);
    }
    return splitMetrics(o.metrics, &s->metricsPath, &s->metricsAddr, error);
}

}  // namespace arbd
