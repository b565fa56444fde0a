// Affinity-only backend: sched_setaffinity on carrier threads, no isolation from other processes.
// Works unprivileged for the caller's own processes.
#include <algorithm>

#include "backend.h"

namespace arbd {
namespace {

class AffinityBackend final : public Backend {
  public:
    AffinityBackend(Sys& sys, const BackendConfig& config) : sys_(sys), cfg_(config) {}
    const char* name() const override { return "affinity"; }
    bool start(std::vector<Leftover>*, std::string*) override { return true; }
    bool adoptProcess(pid_t, const std::set<pid_t>&, std::string*) override { return true; }
    bool moveToCore(pid_t tid, int core, std::string* error) override {
        return pin(tid, {core}, error);
    }
    // "Unmanaged" = every cpu in use minus the granted ones, computed now.
    bool moveToUnmanaged(pid_t tid, std::string* error) override {
        std::vector<int> cpus;
        for (int c : cfg_.all)
            if (!granted_.count(c)) cpus.push_back(c);
        return pin(tid, cpus, error);
    }
    bool setGrantedCores(const std::set<int>& granted, std::string*) override {
        granted_ = granted;
        return true;
    }
    // A carrier pinned to exactly one managed core by a previous instance can be re-adopted.
    std::optional<int> pinnedCore(pid_t tid) override {
        std::vector<int> cpus;
        if (sys_.getAffinity(tid, &cpus) != 0 || cpus.size() != 1) return std::nullopt;
        if (std::count(cfg_.managed.begin(), cfg_.managed.end(), cpus[0]) == 0) return std::nullopt;
        return cpus[0];
    }
    void stop() override {}

  private:
    bool pin(pid_t tid, const std::vector<int>& cpus, std::string* error) {
        if (int e = sys_.setAffinity(tid, cpus)) {
            if (error) *error = sysError("sched_setaffinity", "tid " + std::to_string(tid), e);
            return false;
        }
        return true;
    }

    Sys& sys_;
    BackendConfig cfg_;
    std::set<int> granted_;
};

}  // namespace

std::unique_ptr<Backend> makeAffinityBackend(Sys& sys, const BackendConfig& config) {
    return std::make_unique<AffinityBackend>(sys, config);
}

}  // namespace arbd
