// The thin syscall/filesystem layer under the backends and the arbiter. Production uses RealSys;
// tests substitute FaultySys (tests/) to inject errors and FakeCgroupSys (fake backend) to emulate
// cpuset membership on a plain directory tree. Every call returns 0 or an errno value.
#pragma once

#include <errno.h>
#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace arbd {

class Sys {
  public:
    virtual ~Sys() = default;
    virtual int readFile(const std::string& path, std::string* out) = 0;
    // Truncates and writes `data` with a single write(2), as cgroup control files require.
    virtual int writeFile(const std::string& path, const std::string& data) = 0;
    virtual int appendFile(const std::string& path, const std::string& data) = 0;
    // A kernel control file the arbiter writes again and again on its hand-over path (a cpuset's
    // tasks or cgroup.threads, the unmanaged set's cpuset.cpus): one whole value per write, as
    // writeFile. The kernel layer keeps a cgroup file open between writes, since opening it walks
    // the path through cgroupfs and costs about as much as the write itself; other files are
    // written as by writeFile. The default is writeFile.
    virtual int writeControlFile(const std::string& path, const std::string& data) {
        return writeFile(path, data);
    }
    virtual int makeDir(const std::string& path) = 0;
    virtual int removeDir(const std::string& path) = 0;
    virtual int removeFile(const std::string& path) = 0;
    // Names of the entries of `path` (no "." / ".."); directories only when dirsOnly.
    virtual int listDir(const std::string& path, bool dirsOnly,
                        std::vector<std::string>* names) = 0;
    virtual bool exists(const std::string& path) = 0;
    // 0 when `tid` is a live thread of process `pid`, else ESRCH (or another errno). The kernel
    // layer asks tgkill(pid, tid, 0), which checks both without a path walk: for a new process's
    // thread (the ATTACH path) a cold access() of /proc/PID/task/TID took 5.4 us against 0.86 us
    // on a 2-vCPU VM. The default looks in /proc, as a layer with no kernel of its own would.
    virtual int threadOfProcess(pid_t pid, pid_t tid) {
        return exists("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid)) ? 0 : ESRCH;
    }
    virtual int setAffinity(pid_t tid, const std::vector<int>& cpus) = 0;
    virtual int getAffinity(pid_t tid, std::vector<int>* cpus) = 0;
    // memfd of `size` bytes that allows sealing; *fd set on success.
    virtual int createSharedMemory(size_t size, int* fd) = 0;
    // The calling thread's niceness (-20..19), read and set; setting a lower one needs
    // CAP_SYS_NICE or an RLIMIT_NICE that allows it (EPERM/EACCES otherwise). A layer with no
    // kernel of its own has no scheduler to ask: ENOSYS.
    virtual int getOwnNice(int* /*nice*/) { return ENOSYS; }
    virtual int setOwnNice(int /*nice*/) { return ENOSYS; }
    // Completes writes a layer deferred (the fake tree defers its bookkeeping files until the
    // arbiter's replies are out). The kernel layer defers nothing.
    virtual void flush() {}
};

// Forwards every call to the kernel.
std::unique_ptr<Sys> makeRealSys();

// errno text with the path, e.g. "write /x/tasks: No such process".
std::string sysError(const char* op, const std::string& path, int err);

// Process facts read through a Sys from a proc root (default "/proc").
class ProcInfo {
  public:
    ProcInfo(Sys& sys, std::string procRoot) : sys_(sys), root_(std::move(procRoot)) {}
    bool threadBelongsTo(pid_t pid, pid_t tid);
    bool threadAlive(pid_t tid);
    std::vector<pid_t> threads(pid_t pid);
    std::string command(pid_t pid);
    std::vector<gid_t> groups(pid_t pid);
    const std::string& root() const { return root_; }

  private:
    Sys& sys_;
    std::string root_;
};

}  // namespace arbd
