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

// Reads every set's tasks file once, so later moves know where each thread is.
void FakeCgroupSys::loadMembership() {
    if (loaded_) return;
    loaded_ = true;
    std::vector<std::string> dirs;
    std::vector<std::string> sets = {root_};
    if (base_.listDir(root_, true, &dirs) == 0)
        for (const auto& d : dirs) sets.push_back(root_ + "/" + d);
    for (const auto& set : sets) {
        std::string text;
        if (base_.readFile(set + "/tasks", &text) != 0) continue;
        std::istringstream in(text);
        pid_t tid;
        while (in >> tid) setOf_[tid] = set;
    }
}

void FakeCgroupSys::record(const std::string& line) {
    base_.appendFile(root_ + "/operations.log", line + "\n");
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
    std::string old = setOf_.count(tid) ? setOf_[tid] : "";
    setOf_[tid] = setDir;
    if (!old.empty() && old != setDir) {
        if (int e = rewriteMembers(old)) return e;
    }
    if (int e = rewriteMembers(setDir)) return e;
    record("move " + std::to_string(tid) + " " + baseName(setDir));
    return 0;
}

int FakeCgroupSys::readFile(const std::string& path, std::string* out) {
    if (!underRoot(path) || baseName(path) != "tasks") return base_.readFile(path, out);
    std::string text;
    if (int e = base_.readFile(path, &text)) return e;
    // The kernel drops exited threads from tasks; do the same.
    std::istringstream in(text);
    out->clear();
    pid_t tid;
    while (in >> tid)
        if (proc_.threadAlive(tid)) *out += std::to_string(tid) + "\n";
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
    if (e == 0 && underRoot(path)) record("mkdir " + baseName(path));
    return e;
}

// rmdir of a set: EBUSY while live threads are in it; otherwise its files go with it (as in
// cgroupfs, where control files vanish with the directory).
int FakeCgroupSys::removeDir(const std::string& path) {
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
    if (int e = base_.removeDir(path)) return e;
    record("rmdir " + baseName(path));
    return 0;
}

}  // namespace arbd
