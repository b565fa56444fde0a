#include "fake_cgroup_sys.h"

#include <errno.h>

#include <set>
#include <sstream>

namespace arbd {

FakeCgroupSys::FakeCgroupSys(Sys& base, std::string root, std::string procRoot)
    : base_(base), root_(std::move(root)), proc_(base, std::move(procRoot)) {}

bool FakeCgroupSys::underRoot(const std::string& path) const {
    return path == root_ || path.rfind(root_ + "/", 0) == 0;
}

std::string FakeCgroupSys::dirOf(const std::string& path) {
    auto slash = path.rfind('/');
    return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string FakeCgroupSys::baseName(const std::string& path) {
    auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Replays the journal once: membership survives arbiter restarts and crashes, as the kernel's does.
void FakeCgroupSys::loadMembership() {
    if (loaded_) return;
    loaded_ = true;
    std::string journal;
    if (base_.readFile(root_ + "/operations.log", &journal) != 0) return;
    std::istringstream in(journal);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream f(line);
        std::string op, a, b;
        f >> op >> a >> b;
        if (op == "move") {
            setOf_[static_cast<pid_t>(atol(a.c_str()))] = absolute(b);
        } else if (op == "rmdir") {
            for (auto it = setOf_.begin(); it != setOf_.end();)
                it = it->second == absolute(a) ? setOf_.erase(it) : std::next(it);
        }
    }
}

std::string FakeCgroupSys::relative(const std::string& setDir) const {
    return setDir == root_ ? "." : setDir.substr(root_.size() + 1);
}

std::string FakeCgroupSys::absolute(const std::string& rel) const {
    return rel == "." ? root_ : root_ + "/" + rel;
}

// The journal entry is written before the operation returns (so a crash cannot lose it); the tasks
// files are only a view of the journal and are rewritten at flush().
void FakeCgroupSys::record(const std::string& line) {
    base_.appendFile(root_ + "/operations.log", line + "\n");
}

void FakeCgroupSys::flush() {
    for (const auto& set : dirtySets_) rewriteMembers(set);
    dirtySets_.clear();
}

// Rewrites a set's tasks file from the membership map (sorted, one tid per line).
int FakeCgroupSys::rewriteMembers(const std::string& setDir) {
    std::string text;
    for (const auto& [tid, set] : setOf_)
        if (set == setDir) text += std::to_string(tid) + "\n";
    return base_.writeFile(setDir + "/tasks", text);
}

int FakeCgroupSys::moveThread(pid_t tid, const std::string& setDir) {
    if (tid <= 0 || !proc_.threadAlive(tid)) return ESRCH;
    loadMembership();
    auto it = setOf_.find(tid);
    if (it != setOf_.end()) dirtySets_.insert(it->second);
    setOf_[tid] = setDir;
    dirtySets_.insert(setDir);
    record("move " + std::to_string(tid) + " " + relative(setDir));
    return 0;
}

int FakeCgroupSys::readFile(const std::string& path, std::string* out) {
    if (!underRoot(path) || baseName(path) != "tasks") {
        if (underRoot(path)) flush();
        return base_.readFile(path, out);
    }
    std::string set = dirOf(path);
    if (!base_.exists(set)) return ENOENT;
    loadMembership();
    out->clear();
    // Members from the journal; the kernel drops exited threads from tasks, and so does this.
    for (const auto& [tid, where] : setOf_)
        if (where == set && proc_.threadAlive(tid)) *out += std::to_string(tid) + "\n";
    return 0;
}

int FakeCgroupSys::writeFile(const std::string& path, const std::string& data) {
    if (!underRoot(path)) return base_.writeFile(path, data);
    std::string name = baseName(path);
    if (name == "tasks" || name == "cgroup.threads") {
        pid_t tid = static_cast<pid_t>(atol(data.c_str()));
        return moveThread(tid, dirOf(path));
    }
    if (name == "cgroup.procs") {
        pid_t pid = static_cast<pid_t>(atol(data.c_str()));
        auto tids = proc_.threads(pid);
        if (tids.empty()) return ESRCH;
        for (pid_t tid : tids) moveThread(tid, dirOf(path));
        return 0;
    }
    if (int e = base_.writeFile(path, data)) return e;
    record("write " + path.substr(root_.size() + 1) + " " + data);
    return 0;
}

int FakeCgroupSys::appendFile(const std::string& path, const std::string& data) {
    return base_.appendFile(path, data);
}

int FakeCgroupSys::makeDir(const std::string& path) {
    int e = base_.makeDir(path);
    if (e == 0 && underRoot(path) && path != root_) record("mkdir " + relative(path));
    return e;
}

// rmdir of a set: EBUSY while live threads are in it; otherwise its files go with it (as in
// cgroupfs, where control files vanish with the directory).
int FakeCgroupSys::removeDir(const std::string& path) {
    flush();
    if (!underRoot(path) || path == root_) return base_.removeDir(path);
    loadMembership();
    for (auto it = setOf_.begin(); it != setOf_.end();) {
        if (it->second != path) {
            ++it;
            continue;
        }
        if (proc_.threadAlive(it->first)) return EBUSY;
        it = setOf_.erase(it);
    }
    std::vector<std::string> files;
    if (int e = base_.listDir(path, false, &files)) return e;
    for (const auto& f : files) base_.removeFile(path + "/" + f);
    dirtySets_.erase(path);
    if (int e = base_.removeDir(path)) return e;
    record("rmdir " + relative(path));
    return 0;
}

}  // namespace arbd
