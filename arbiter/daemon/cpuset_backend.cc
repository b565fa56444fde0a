// cgroup v1 and v2 cpuset backends (one class; the differences are file names, v2's threaded mode
// and, with adoptAll, v2's partition). See backend.h for the layout.
#include <errno.h>

#include <algorithm>
#include <sstream>

#include "arbpolicy/topology.h"
#include "backend.h"
#include "log.h"

namespace arbd {
namespace {

// cgroup files end with a newline.
std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

// tasks / cgroup.threads / cgroup.procs: one id per line.
std::vector<pid_t> parseIds(const std::string& text) {
    std::vector<pid_t> ids;
    std::istringstream in(text);
    pid_t id;
    while (in >> id) ids.push_back(id);
    return ids;
}

class CpusetBackend final : public Backend {
  public:
    CpusetBackend(Sys& sys, const BackendConfig& config, bool v2)
        : sys_(sys), cfg_(config), v2_(v2), proc_(sys, config.procRoot) {
        if (cfg_.returnDir.empty()) cfg_.returnDir = parentOf(cfg_.root);
    }

    const char* name() const override { return v2_ ? "cgroup-v2" : "cgroup-v1"; }

    bool start(std::vector<Leftover>* leftovers, std::string* error) override {
        if (!ensureRoot(error)) return false;
        // v2: R's cpuset files appear only once its parent delegates cpuset; a partition a
        // killed arbiter left is dissolved so R's cpus are checked against the parent's.
        if (v2_ && (!enableController(error) || !dissolvePartition(error))) return false;
        if (!readMems(error) || !checkCpus(error)) return false;
        if (v2_ && cfg_.adoptAll && !makePartition(error)) return false;
        if (!cleanLeftovers(leftovers, error)) return false;
        if (!makeSet(unmanagedDir(), arbpolicy::formatCpuList(cfg_.all), error)) return false;
        for (int core : cfg_.managed)
            if (!makeSet(coreDir(core), std::to_string(core), error)) return false;
        std::set<int> granted;
        for (const auto& l : *leftovers) granted.insert(l.core);
        if (!setGrantedCores(granted, error)) return false;
        if (cfg_.adoptAll) adoptAll();
        return true;
    }

    bool adoptProcess(pid_t pid, const std::set<pid_t>& keep, std::string* error) override {
        if (keep.empty())
            return write(unmanagedDir() + "/cgroup.procs", std::to_string(pid), error);
        for (pid_t tid : proc_.threads(pid)) {
            if (keep.count(tid)) continue;
            std::string ignored;  // a thread may exit meanwhile
            write(unmanagedDir() + "/" + threadsFile(), std::to_string(tid), &ignored);
        }
        return true;
    }

    // The hand-over path: control files kept open (Sys::writeControlFile).
    bool moveToCore(pid_t tid, int core, std::string* error) override {
        return writeControl(coreDir(core) + "/" + threadsFile(), std::to_string(tid), error);
    }

    bool moveToUnmanaged(pid_t tid, std::string* error) override {
        return writeControl(unmanagedDir() + "/" + threadsFile(), std::to_string(tid), error);
    }

    bool setGrantedCores(const std::set<int>& granted, std::string* error) override {
        std::vector<int> cpus;
        for (int c : cfg_.all)
            if (!granted.count(c)) cpus.push_back(c);
        return writeControl(unmanagedDir() + "/cpuset.cpus", arbpolicy::formatCpuList(cpus), error);
    }

    void flush() override { sys_.flush(); }

    void stop() override {
        std::vector<std::string> sets = {unmanagedDir()};
        for (int core : cfg_.managed) sets.push_back(coreDir(core));
        for (const auto& set : sets) emptyAndRemove(set);
        if (partitioned_) {  // the cpus go back to the rest of the machine
            std::string error;
            if (!dissolvePartition(&error)) logf(LogLevel::kWarn, "%s", error.c_str());
        }
        // A root this arbiter made goes too, so a clean stop leaves the hierarchy as it found it;
        // one that was there before (an operator's, or a killed arbiter's) stays.
        if (createdRoot_) {
            if (int e = sys_.removeDir(cfg_.root); e != 0 && e != ENOENT)
                logf(LogLevel::kWarn, "%s", sysError("rmdir", cfg_.root, e).c_str());
            createdRoot_ = false;
        }
    }

  private:
    static std::string parentOf(const std::string& path) {
        auto slash = path.rfind('/');
        return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
    }
    std::string unmanagedDir() const { return cfg_.root + "/unmanaged"; }
    std::string coreDir(int core) const { return cfg_.root + "/core-" + std::to_string(core); }
    const char* threadsFile() const { return v2_ ? "cgroup.threads" : "tasks"; }

    bool write(const std::string& path, const std::string& data, std::string* error) {
        return written(sys_.writeFile(path, data), path, data, error);
    }
    bool writeControl(const std::string& path, const std::string& data, std::string* error) {
        return written(sys_.writeControlFile(path, data), path, data, error);
    }
    // A write's result as this layer reports it: true, or false with the path and value.
    static bool written(int e, const std::string& path, const std::string& data,
                        std::string* error) {
        if (e && error) *error = sysError("write", path, e) + " (value " + data + ")";
        return e == 0;
    }

    bool read(const std::string& path, std::string* out, std::string* error) {
        if (int e = sys_.readFile(path, out)) {
            if (error) *error = sysError("read", path, e);
            return false;
        }
        *out = trim(*out);
        return true;
    }

    // Creates R when missing (v1: cpus/mems copied from the parent; v2: the parent must delegate
    // cpuset).
    bool ensureRoot(std::string* error) {
        if (sys_.exists(cfg_.root)) return true;
        if (int e = sys_.makeDir(cfg_.root)) {
            if (error) *error = sysError("mkdir", cfg_.root, e);
            return false;
        }
        createdRoot_ = true;
        if (v2_) return true;
        std::string cpus, mems, parent = parentOf(cfg_.root);
        return read(parent + "/cpuset.cpus", &cpus, error) &&
               read(parent + "/cpuset.mems", &mems, error) &&
               write(cfg_.root + "/cpuset.cpus", cpus, error) &&
               write(cfg_.root + "/cpuset.mems", mems, error);
    }

    // Memory nodes come from R (its effective set on v2), never a constant.
    bool readMems(std::string* error) {
        if (!read(cfg_.root + (v2_ ? "/cpuset.mems.effective" : "/cpuset.mems"), &mems_, error))
            return false;
        if (mems_.empty()) {
            if (error) *error = cfg_.root + " has no memory nodes (cpuset.mems is empty)";
            return false;
        }
        return true;
    }

    bool checkCpus(std::string* error) {
        std::string text;
        if (!read(cfg_.root + (v2_ ? "/cpuset.cpus.effective" : "/cpuset.cpus"), &text, error))
            return false;
        auto have = arbpolicy::parseCpuList(text);
        if (!have) {
            if (error) *error = "cannot parse cpus of " + cfg_.root + ": " + text;
            return false;
        }
        for (int c : cfg_.all) {
            if (!std::binary_search(have->begin(), have->end(), c)) {
                if (error)
                    *error = "cpu " + std::to_string(c) + " is not in " + cfg_.root + " (cpus " +
                             text + ")";
                return false;
            }
        }
        return true;
    }

    // v2: R needs cpuset from its parent (a cgroup2 mount without systemd delegates nothing;
    // systemd delegates it from the root), then delegates it to the sets. The parent's
    // subtree_control is the one file outside R that may be written, and only to add cpuset.
    bool enableController(std::string* error) {
        std::string controllers;
        if (!read(cfg_.root + "/cgroup.controllers", &controllers, error)) return false;
        if (controllers.find("cpuset") == std::string::npos) {
            std::string parent = parentOf(cfg_.root), offered;
            if (read(parent + "/cgroup.controllers", &offered, nullptr) &&
                offered.find("cpuset") != std::string::npos) {
                logf(LogLevel::kInfo, "enabling the cpuset controller in %s/cgroup.subtree_control",
                     parent.c_str());
                if (!write(parent + "/cgroup.subtree_control", "+cpuset", error) ||
                    !read(cfg_.root + "/cgroup.controllers", &controllers, error))
                    return false;
            }
        }
        if (controllers.find("cpuset") == std::string::npos) {
            if (error)
                *error = "cpuset controller not available in " + cfg_.root +
                         " (enable it in the parent's cgroup.subtree_control)";
            return false;
        }
        return write(cfg_.root + "/cgroup.subtree_control", "+cpuset", error);
    }

    // v2 with adoptAll: R becomes a partition root over every cpu the arbiter uses, so no cgroup
    // outside R (systemd's slices, whose processes adoptAll cannot move) runs on them; inside R
    // only a core's carrier may run on it. The kernel keeps at least one cpu for the root
    // cgroup's own tasks, so --cpus must leave one out.
    bool makePartition(std::string* error) {
        std::string cpus = arbpolicy::formatCpuList(cfg_.all), state;
        std::string file = cfg_.root + "/cpuset.cpus.partition";
        if (!write(cfg_.root + "/cpuset.cpus", cpus, error)) return false;
        partitioned_ = true;  // from here on stop() gives the cpus back
        std::string why;
        if (write(file, "root", &why) && read(file, &state, &why) && state == "root") return true;
        if (why.empty()) why = "the kernel says: " + state;
        std::string ignored;
        dissolvePartition(&ignored);
        if (error)
            *error = "cannot make " + cfg_.root + " a cpuset partition of cpus " + cpus + " (" +
                     why +
                     "); with --adopt-all-processes on cgroup v2 the arbiter's cpus are taken "
                     "from the rest of the machine, so --cpus must leave at least one cpu out "
                     "and overlap no other cgroup's cpuset.cpus";
        return false;
    }

    // Makes R an ordinary member again, when it is a partition (valid or not), with no cpus of
    // its own (it inherits the parent's) or, while threads a killed arbiter left are still in it
    // (the kernel refuses to empty a populated cpuset: ENOSPC), all of the parent's cpus. No-op
    // where the kernel has no partitions.
    bool dissolvePartition(std::string* error) {
        std::string file = cfg_.root + "/cpuset.cpus.partition", state;
        if (sys_.readFile(file, &state) != 0) return true;
        partitioned_ = false;
        if (trim(state) == "member") return true;
        logf(LogLevel::kInfo, "%s was a cpuset partition (%s): dissolving it", cfg_.root.c_str(),
             trim(state).c_str());
        if (!write(file, "member", error)) return false;
        // "\n": a zero-length write never reaches the kernel's handler.
        std::string cpusFile = cfg_.root + "/cpuset.cpus";
        int e = sys_.writeFile(cpusFile, "\n");
        if (e == 0) return true;
        if (e != ENOSPC) {
            if (error) *error = sysError("write", cpusFile, e) + " (value empty)";
            return false;
        }
        std::string parentCpus;
        return read(parentOf(cfg_.root) + "/cpuset.cpus.effective", &parentCpus, error) &&
               write(cpusFile, parentCpus, error);
    }

    // Creates (or repairs) one set. v2 sets are threaded so single threads can be moved.
    bool makeSet(const std::string& dir, const std::string& cpus, std::string* error) {
        int e = sys_.makeDir(dir);
        if (e != 0 && e != EEXIST) {
            if (error) *error = sysError("mkdir", dir, e);
            return false;
        }
        if (v2_ && e == 0 && !write(dir + "/cgroup.type", "threaded", error)) return false;
        return write(dir + "/cpuset.mems", mems_, error) &&
               write(dir + "/cpuset.cpus", cpus, error);
    }

    // A previous arbiter's sets: threads on a still-managed core are reported for re-adoption;
    // sets of cores no longer managed are emptied and removed.
    bool cleanLeftovers(std::vector<Leftover>* leftovers, std::string* error) {
        std::vector<std::string> names;
        if (int e = sys_.listDir(cfg_.root, true, &names)) {
            if (error) *error = sysError("list", cfg_.root, e);
            return false;
        }
        for (const auto& name : names) {
            if (name.rfind("core-", 0) != 0) continue;
            int core = atoi(name.c_str() + 5);
            std::string dir = cfg_.root + "/" + name;
            bool managed = std::count(cfg_.managed.begin(), cfg_.managed.end(), core) > 0;
            if (!managed) {
                logf(LogLevel::kInfo, "removing stale set %s", dir.c_str());
                emptyAndRemove(dir);
                continue;
            }
            std::string text;
            if (sys_.readFile(dir + "/" + threadsFile(), &text) != 0) continue;
            for (pid_t tid : parseIds(text)) leftovers->push_back({tid, core});
        }
        return true;
    }

    void emptyAndRemove(const std::string& dir) {
        std::string text;
        if (sys_.readFile(dir + "/" + threadsFile(), &text) == 0) {
            // v2 moves whole processes out of a threaded subtree (the kernel takes the leader).
            std::string target = cfg_.returnDir + (v2_ ? "/cgroup.procs" : "/tasks");
            for (pid_t tid : parseIds(text)) {
                if (int e = sys_.writeFile(target, std::to_string(tid)); e != 0 && e != ESRCH)
                    logf(LogLevel::kWarn, "%s", sysError("write", target, e).c_str());
            }
        }
        if (int e = sys_.removeDir(dir); e != 0 && e != ENOENT)
            logf(LogLevel::kWarn, "%s", sysError("rmdir", dir, e).c_str());
    }

    // Production opt-in: every task of R's parent goes to R/unmanaged. Tasks the kernel refuses to
    // move (per-cpu kernel threads) stay.
    void adoptAll() {
        std::string text;
        std::string source = parentOf(cfg_.root) + (v2_ ? "/cgroup.procs" : "/tasks");
        if (sys_.readFile(source, &text) != 0) return;
        int moved = 0;
        for (pid_t id : parseIds(text)) {
            if (sys_.writeFile(unmanagedDir() + (v2_ ? "/cgroup.procs" : "/tasks"),
                               std::to_string(id)) == 0)
                moved++;
        }
        logf(LogLevel::kInfo, "adopted %d tasks into %s", moved, unmanagedDir().c_str());
    }

    Sys& sys_;
    BackendConfig cfg_;
    const bool v2_;
    ProcInfo proc_;
    std::string mems_;
    bool partitioned_ = false;  // R is (or may still be) a partition this arbiter made
    bool createdRoot_ = false;  // R did not exist when this arbiter started: stop() removes it
};

}  // namespace

// Factory: the class stays private to this file.
std::unique_ptr<Backend> makeCpusetBackend(Sys& sys, const BackendConfig& config, bool v2) {
    return std::make_unique<CpusetBackend>(sys, config, v2);
}

}  // namespace arbd
