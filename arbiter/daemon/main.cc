// core-arbiter: see options.cc for the command line and arbiter/PROTOCOL.md for the protocol.
#include <signal.h>
#include <sys/random.h>

#include <iostream>
#include <memory>

#include "arbiter.h"
#include "fake_cgroup_sys.h"
#include "log.h"
#include "options.h"
#include "own_priority.h"
#include "server.h"

namespace {

// The fake machine's root holds what a cpuset root would: its cpus (--cpus) and memory nodes (this
// machine's online nodes, read from sysfs).
bool prepareFakeRoot(arbd::Sys& sys, const arbd::Settings& s, const std::string& sysfsRoot,
                     std::string* error) {
    const std::string& root = s.backend.root;
    int e = sys.makeDir(root);
    if (e != 0 && e != EEXIST) {
        *error = arbd::sysError("mkdir", root, e);
        return false;
    }
    std::string mems;
    if (sys.readFile(sysfsRoot + "/devices/system/node/online", &mems) != 0 || mems.empty())
        mems.assign(1, '0');
    e = sys.writeFile(root + "/cpuset.cpus", arbpolicy::formatCpuList(s.backend.all));
    if (!e) e = sys.writeFile(root + "/cpuset.mems", mems);
    if (e) *error = arbd::sysError("write", root, e);
    return e == 0;
}

uint64_t randomEpoch() {
    uint64_t epoch = 0;
    if (getrandom(&epoch, sizeof(epoch), 0) != sizeof(epoch))
        epoch = static_cast<uint64_t>(arbd::Clock::now().time_since_epoch().count());
    return epoch;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace arbd;
    arbd::Options options;
    if (int status = parseOptions(argc, argv, &options); status >= 0) return status;
    auto realSys = makeRealSys();
    Settings settings;
    std::string error;
    if (!resolveOptions(options, *realSys, &settings, &error)) {
        std::cerr << "core-arbiter: " << error << "\n";
        return 2;
    }
    setLogLevel(settings.logLevel);
    applyOwnNice(*realSys, settings.nice);  // first: before any thread exists (per-thread)

    // Signals are handled synchronously by the loop's signalfd.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGHUP);
    sigprocmask(SIG_BLOCK, &signals, nullptr);
    signal(SIGPIPE, SIG_IGN);

    Sys* sys = realSys.get();
    std::unique_ptr<FakeCgroupSys> fakeSys;
    std::unique_ptr<Backend> backend;
    switch (settings.backend.kind) {
        case BackendKind::kFake:
            if (!prepareFakeRoot(*realSys, settings, options.sysfsRoot, &error)) break;
            fakeSys =
                std::make_unique<FakeCgroupSys>(*realSys, settings.backend.root, options.procRoot);
            backend = makeCpusetBackend(*fakeSys, settings.backend, false);
            break;
        case BackendKind::kCgroupV1:
            backend = makeCpusetBackend(*sys, settings.backend, false);
            break;
        case BackendKind::kCgroupV2:
            backend = makeCpusetBackend(*sys, settings.backend, true);
            break;
        default:
            backend = makeAffinityBackend(*sys, settings.backend);
            break;
    }
    if (!backend) {
        std::cerr << "core-arbiter: " << error << "\n";
        return 1;
    }

    ServerConfig serverConfig{settings.socketPath, settings.socketGroup, settings.metricsPath,
                              settings.metricsAddr};
    Server server(serverConfig);
    if (!server.open(&error)) {
        std::cerr << "core-arbiter: " << error << "\n";
        return 1;
    }
    ArbiterConfig config;
    config.managed = settings.managed;
    config.releaseTimeout = settings.releaseTimeout;
    config.releasePoll = settings.releasePoll;
    config.readoptTimeout = settings.readoptTimeout;
    config.sharePeriod = settings.sharePeriod;
    config.limits = settings.limits;
    config.procRoot = options.procRoot;
    config.epoch = randomEpoch();
    Arbiter arbiter(config, *backend, server, *sys);
    if (!arbiter.start(Clock::now(), &error)) {
        std::cerr << "core-arbiter: cannot set up the " << backend->name() << " backend: " << error
                  << "\n";
        server.close();
        return 1;
    }
    server.attach(&arbiter);
    server.onReload([&] {
        std::string why;
        if (options.configPath.empty()) return;
        auto limits = loadLimits(*sys, options.configPath, &why);
        if (!limits) {
            logf(LogLevel::kError, "reload failed, keeping the old limits: %s", why.c_str());
            return;
        }
        arbiter.setLimits(std::move(limits));
        logf(LogLevel::kInfo, "limits reloaded from %s", options.configPath.c_str());
    });
    logf(LogLevel::kInfo, "listening on %s; backend %s; managing cpus %s",
         settings.socketPath.c_str(), backendName(settings.backend.kind),
         arbpolicy::formatCpuList(settings.backend.managed).c_str());
    const bool movesThreads = settings.backend.kind == BackendKind::kCgroupV1 ||
                              settings.backend.kind == BackendKind::kCgroupV2;
    if (movesThreads && !settings.favorDynmods) {
        // Once, at start: the operator's choice (it cannot be undone before a reboot).
        logf(LogLevel::kWarn,
             "no cgroup mount has favordynmods: after a quiet spell the kernel makes a thread "
             "move wait for an RCU grace period (milliseconds), so such a hand-over stalls this "
             "loop that long; see arbrun doctor");
    }
    bool ok = server.run();
    arbiter.stop();
    server.close();
    return ok ? 0 : 1;
}
