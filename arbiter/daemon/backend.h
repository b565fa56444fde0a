// Backends place carrier threads on cores: cgroup v1 cpuset, cgroup v2 cpuset, affinity-only, and
// fake (the v1 cpuset backend over FakeCgroupSys). All of them go through a Sys so tests inject
// errors.
//
// Layout of the cpuset backends under the cgroup root R: R/unmanaged (every cpu the arbiter uses
// minus the granted ones) and R/core-<k> (cpu k) for each managed core. Only this subtree is
// touched, except with adoptAll, where every task of R's parent is moved into R/unmanaged at start.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sys.h"

namespace arbd {

enum class BackendKind { kAuto, kCgroupV1, kCgroupV2, kAffinity, kFake };

struct BackendConfig {
    BackendKind kind = BackendKind::kAuto;
    std::string root;          // cgroup root (cpuset backends, fake)
    std::vector<int> all;      // every cpu the arbiter uses (managed + reserved)
    std::vector<int> managed;  // cores that are granted to processes
    bool adoptAll = false;     // move every task of R's parent into R/unmanaged (production opt-in)
    std::string procRoot = "/proc";
    // Where tasks go on clean shutdown and when leftovers are removed; default: R's parent.
    std::string returnDir;
};

// A thread found on a managed core's set at start, left by a previous (crashed) arbiter.
struct Leftover {
    pid_t tid;
    int core;
};

class Backend {
  public:
    virtual ~Backend() = default;
    virtual const char* name() const = 0;
    // Builds (or repairs) the layout and reports threads a previous instance left on managed cores.
    virtual bool start(std::vector<Leftover>* leftovers, std::string* error) = 0;
    // Moves a newly registered process's threads (except `keep`) into the unmanaged set.
    virtual bool adoptProcess(pid_t pid, const std::set<pid_t>& keep, std::string* error) = 0;
    virtual bool moveToCore(pid_t tid, int core, std::string* error) = 0;
    virtual bool moveToUnmanaged(pid_t tid, std::string* error) = 0;
    // Makes the unmanaged set exactly `all` minus `granted`.
    virtual bool setGrantedCores(const std::set<int>& granted, std::string* error) = 0;
    // The managed core `tid` is pinned to, when the backend can tell without leftovers (affinity).
    virtual std::optional<int> pinnedCore(pid_t tid) { return std::nullopt; }
    // Clean shutdown: threads go back to where they came from, the layout is removed.
    virtual void stop() = 0;
    // Called after each batch of replies: deferred bookkeeping may be written now.
    virtual void flush() {}
};

std::unique_ptr<Backend> makeCpusetBackend(Sys& sys, const BackendConfig& config, bool v2);
std::unique_ptr<Backend> makeAffinityBackend(Sys& sys, const BackendConfig& config);

// What `--backend auto` and the default --cgroup-root resolve to on this machine.
struct Detected {
    BackendKind kind;
    std::string cgroupRoot;  // "<mount>/arbrun" for the cgroup kinds
    // Some cgroup mount has "favordynmods" (Linux 6.0+): moving a thread between cpusets never
    // waits for an RCU grace period. Without it the first move after a quiet spell does (~6 ms
    // on a 2-vCPU VM), and a hand-over then stalls the arbiter's loop that long.
    bool favorDynmods = false;
};
Detected detectBackend(Sys& sys, const std::string& procRoot);

const char* backendName(BackendKind kind);
bool parseBackendKind(const std::string& text, BackendKind* kind);

}  // namespace arbd
