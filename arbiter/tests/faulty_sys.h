// A Sys for tests: forwards to another Sys, but fails chosen operations on chosen paths with a
// chosen errno, and records setAffinity calls instead of pinning anything.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sys.h"

namespace arbtest {

class FaultySys final : public arbd::Sys {
  public:
    explicit FaultySys(arbd::Sys& base) : base_(base) {}
    // Fails operation `op` ("read", "write", "mkdir", "rmdir", "list", "affinity", "memfd",
    // "getnice", "setnice", "tgkill": the path is the tid) on paths containing `pathPart`, `times`
    // times (-1: always).
    void fail(std::string op, std::string pathPart, int err, int times = -1) {
        rules_.push_back({std::move(op), std::move(pathPart), err, times});
    }
    std::vector<std::pair<pid_t, std::vector<int>>> affinity;  // recorded setAffinity calls
    std::vector<int> reportedAffinity;                         // what getAffinity returns
    int ownNice = 0;             // the niceness getOwnNice reports and setOwnNice changes
    std::vector<int> niceCalls;  // recorded setOwnNice calls (nothing is reniced)

    int readFile(const std::string& p, std::string* out) override {
        if (int e = check("read", p)) return e;
        return base_.readFile(p, out);
    }
    int writeFile(const std::string& p, const std::string& d) override {
        if (int e = check("write", p)) return e;
        return base_.writeFile(p, d);
    }
    int appendFile(const std::string& p, const std::string& d) override {
        if (int e = check("write", p)) return e;
        return base_.appendFile(p, d);
    }
    int makeDir(const std::string& p) override {
        if (int e = check("mkdir", p)) return e;
        return base_.makeDir(p);
    }
    int removeDir(const std::string& p) override {
        if (int e = check("rmdir", p)) return e;
        return base_.removeDir(p);
    }
    int removeFile(const std::string& p) override { return base_.removeFile(p); }
    int listDir(const std::string& p, bool dirsOnly, std::vector<std::string>* names) override {
        if (int e = check("list", p)) return e;
        return base_.listDir(p, dirsOnly, names);
    }
    bool exists(const std::string& p) override { return base_.exists(p); }
    int threadOfProcess(pid_t pid, pid_t tid) override {
        if (int e = check("tgkill", std::to_string(tid))) return e;
        return base_.threadOfProcess(pid, tid);
    }
    int setAffinity(pid_t tid, const std::vector<int>& cpus) override {
        if (int e = check("affinity", std::to_string(tid))) return e;
        affinity.push_back({tid, cpus});
        return 0;
    }
    int getAffinity(pid_t tid, std::vector<int>* cpus) override {
        *cpus = reportedAffinity;
        return 0;
    }
    int getOwnNice(int* nice) override {
        if (int e = check("getnice", "")) return e;
        *nice = ownNice;
        return 0;
    }
    int setOwnNice(int nice) override {
        if (int e = check("setnice", "")) return e;
        niceCalls.push_back(nice);
        ownNice = nice;
        return 0;
    }
    int createSharedMemory(size_t size, int* fd) override {
        if (int e = check("memfd", "")) return e;
        return base_.createSharedMemory(size, fd);
    }

  private:
    struct Rule {
        std::string op, pathPart;
        int err;
        int times;
    };
    int check(const std::string& op, const std::string& path) {
        for (auto& r : rules_) {
            if (r.op != op || path.find(r.pathPart) == std::string::npos || r.times == 0) continue;
            if (r.times > 0) r.times--;
            return r.err;
        }
        return 0;
    }
    arbd::Sys& base_;
    std::vector<Rule> rules_;
};

}  // namespace arbtest
