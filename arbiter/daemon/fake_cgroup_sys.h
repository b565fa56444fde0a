// The fake backend's "kernel": a Sys decorator that gives a plain directory tree cgroup v1 cpuset
// semantics for the files the cpuset backend uses. Writing a tid to <set>/tasks moves it there
// (membership kept in the sets' tasks files), writing a pid to <set>/cgroup.procs moves all its
// threads, reading tasks lists only live threads, rmdir of a set with live members fails with
// EBUSY. Every mutation is appended to <root>/operations.log. Nothing is pinned: it simulates any
// machine.
#pragma once

#include <map>
#include <set>
#include <string>

#include "sys.h"

namespace arbd {

class FakeCgroupSys final : public Sys {
  public:
    // `base` does the real file I/O; `root` is the fake hierarchy; `procRoot` tells live threads.
    FakeCgroupSys(Sys& base, std::string root, std::string procRoot);
    ~FakeCgroupSys() override { flush(); }

    int readFile(const std::string& path, std::string* out) override;
    int writeFile(const std::string& path, const std::string& data) override;
    int appendFile(const std::string& path, const std::string& data) override;
    int makeDir(const std::string& path) override;
    int removeDir(const std::string& path) override;
    int removeFile(const std::string& path) override { return base_.removeFile(path); }
    int listDir(const std::string& path, bool dirsOnly, std::vector<std::string>* names) override {
        return base_.listDir(path, dirsOnly, names);
    }
    bool exists(const std::string& path) override { return base_.exists(path); }
    int threadOfProcess(pid_t pid, pid_t tid) override { return base_.threadOfProcess(pid, tid); }
    int setAffinity(pid_t, const std::vector<int>&) override { return 0; }  // pins nothing
    int getAffinity(pid_t tid, std::vector<int>* cpus) override {
        return base_.getAffinity(tid, cpus);
    }
    int createSharedMemory(size_t size, int* fd) override {
        return base_.createSharedMemory(size, fd);
    }
    void flush() override;

  private:
    bool underRoot(const std::string& path) const;
    static std::string dirOf(const std::string& path);
    static std::string baseName(const std::string& path);
    void loadMembership();
    int moveThread(pid_t tid, const std::string& setDir);
    int rewriteMembers(const std::string& setDir);
    void record(const std::string& line);
    std::string relative(const std::string& setDir) const;  // "." for the root itself
    std::string absolute(const std::string& rel) const;

    Sys& base_;
    const std::string root_;
    ProcInfo proc_;
    bool loaded_ = false;
    // Which set (directory path) each thread is in. Single-threaded use (the arbiter's loop).
    std::map<pid_t, std::string> setOf_;
    std::set<std::string> dirtySets_;  // tasks files to rewrite at flush()
};

}  // namespace arbd
