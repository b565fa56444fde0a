#include "sys.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <sstream>
#include <unordered_map>

namespace arbd {
namespace {

// cgroupfs magic numbers (linux/magic.h): the files worth keeping open.
constexpr long kCgroupMagic = 0x27e0eb;
constexpr long kCgroup2Magic = 0x63677270;

// Used by the arbiter's one event-loop thread (not thread-safe: controlFds_).
class RealSys final : public Sys {
  public:
    ~RealSys() override {
        for (auto& [path, fd] : controlFds_)
            if (fd >= 0) close(fd);
    }
    int readFile(const std::string& path, std::string* out) override {
        int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return errno;
        out->clear();
        char buf[4096];
        for (;;) {
            ssize_t n = read(fd, buf, sizeof(buf));
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) {
                int e = errno;
                close(fd);
                return e;
            }
            if (n == 0) break;
            out->append(buf, static_cast<size_t>(n));
        }
        close(fd);
        return 0;
    }
    int writeFile(const std::string& path, const std::string& data) override {
        return writeWith(path, data, O_WRONLY | O_CREAT | O_TRUNC);
    }
    int appendFile(const std::string& path, const std::string& data) override {
        return writeWith(path, data, O_WRONLY | O_CREAT | O_APPEND);
    }
    // A cgroup file stays open (controlFds_); the value goes in with one pwrite at offset 0, as a
    // fresh open's write would (cgroup files take each write whole and ignore the offset). A
    // write that finds the cgroup gone (ENODEV: removed, perhaps made again) opens it afresh once.
    int writeControlFile(const std::string& path, const std::string& data) override {
        auto it = controlFds_.find(path);
        if (it == controlFds_.end()) it = controlFds_.emplace(path, openControl(path)).first;
        if (it->second < 0) return writeFile(path, data);  // not a cgroup file
        int e = pwriteWhole(it->second, data);
        if (e == ENODEV) {
            close(it->second);
            it->second = openControl(path);
            e = it->second < 0 ? writeFile(path, data) : pwriteWhole(it->second, data);
        }
        return e;
    }
    int makeDir(const std::string& path) override { return mkdir(path.c_str(), 0755) ? errno : 0; }
    // Control files kept open inside go first: an open file pins the removed cgroup's memory.
    int removeDir(const std::string& path) override {
        const std::string prefix = path + "/";
        for (auto it = controlFds_.begin(); it != controlFds_.end();) {
            if (it->first.compare(0, prefix.size(), prefix) != 0) {
                ++it;
                continue;
            }
            if (it->second >= 0) close(it->second);
            it = controlFds_.erase(it);
        }
        return rmdir(path.c_str()) ? errno : 0;
    }
    int removeFile(const std::string& path) override { return unlink(path.c_str()) ? errno : 0; }
    int listDir(const std::string& path, bool dirsOnly, std::vector<std::string>* names) override {
        DIR* d = opendir(path.c_str());
        if (!d) return errno;
        names->clear();
        while (dirent* e = readdir(d)) {
            std::string name = e->d_name;
            if (name == "." || name == "..") continue;
            if (dirsOnly && e->d_type != DT_DIR) continue;
            names->push_back(name);
        }
        closedir(d);
        return 0;
    }
    bool exists(const std::string& path) override { return access(path.c_str(), F_OK) == 0; }
    // Signal 0 checks existence and thread-group membership only; EPERM (an unprivileged arbiter
    // and another user's thread) still says the thread is there.
    int threadOfProcess(pid_t pid, pid_t tid) override {
        if (pid <= 0 || tid <= 0) return ESRCH;
        if (syscall(SYS_tgkill, pid, tid, 0) == 0 || errno == EPERM) return 0;
        return errno;
    }
    int setAffinity(pid_t tid, const std::vector<int>& cpus) override {
        cpu_set_t* set = CPU_ALLOC(kMaxCpus);
        size_t size = CPU_ALLOC_SIZE(kMaxCpus);
        CPU_ZERO_S(size, set);
        for (int c : cpus)
            if (c >= 0 && c < kMaxCpus) CPU_SET_S(c, size, set);
        int r = sched_setaffinity(tid, size, set) ? errno : 0;
        CPU_FREE(set);
        return r;
    }
    int getAffinity(pid_t tid, std::vector<int>* cpus) override {
        cpu_set_t* set = CPU_ALLOC(kMaxCpus);
        size_t size = CPU_ALLOC_SIZE(kMaxCpus);
        int r = sched_getaffinity(tid, size, set) ? errno : 0;
        cpus->clear();
        for (int c = 0; r == 0 && c < kMaxCpus; c++)
            if (CPU_ISSET_S(c, size, set)) cpus->push_back(c);
        CPU_FREE(set);
        return r;
    }
    int createSharedMemory(size_t size, int* fd) override {
        int m = memfd_create("arbrun-release-page", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (m < 0) return errno;
        if (ftruncate(m, static_cast<off_t>(size)) != 0) {
            int e = errno;
            close(m);
            return e;
        }
        *fd = m;
        return 0;
    }
    // PRIO_PROCESS with who 0 is the calling thread on Linux (each thread has its own niceness):
    // the arbiter calls it before it has any other thread. getpriority's -1 is also a niceness,
    // so errno tells a failure apart.
    int getOwnNice(int* nice) override {
        errno = 0;
        const int n = getpriority(PRIO_PROCESS, 0);
        if (n == -1 && errno != 0) return errno;
        *nice = n;
        return 0;
    }
    int setOwnNice(int nice) override {
        return setpriority(PRIO_PROCESS, 0, nice) == 0 ? 0 : errno;
    }

  private:
    static constexpr int kMaxCpus = 8192;
    // An open descriptor for a file on cgroupfs, or -1 (another filesystem, or it cannot be
    // opened: writeFile then reports why).
    static int openControl(const std::string& path) {
        int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
        if (fd < 0) return -1;
        struct statfs fs;
        if (fstatfs(fd, &fs) == 0 && (fs.f_type == kCgroupMagic || fs.f_type == kCgroup2Magic))
            return fd;
        close(fd);
        return -1;
    }
    static int pwriteWhole(int fd, const std::string& data) {
        ssize_t n = pwrite(fd, data.data(), data.size(), 0);
        return n < 0 ? errno : (static_cast<size_t>(n) != data.size() ? EIO : 0);
    }
    std::unordered_map<std::string, int> controlFds_;  // path -> cgroup file descriptor, or -1
    static int writeWith(const std::string& path, const std::string& data, int flags) {
        int fd = open(path.c_str(), flags | O_CLOEXEC, 0644);
        if (fd < 0) return errno;
        ssize_t n = write(fd, data.data(), data.size());
        int e = n < 0 ? errno : (static_cast<size_t>(n) != data.size() ? EIO : 0);
        if (close(fd) != 0 && e == 0) e = errno;
        return e;
    }
};

}  // namespace

std::unique_ptr<Sys> makeRealSys() {
    return std::make_unique<RealSys>();
}

std::string sysError(const char* op, const std::string& path, int err) {
    return std::string(op) + " " + path + ": " + strerror(err);
}

// Through the Sys layer's thread check when procfs is the kernel's own (no path walk); through the
// tree under another --proc-root, which is what tests and a containerised arbiter point at.
bool ProcInfo::threadBelongsTo(pid_t pid, pid_t tid) {
    if (root_ == "/proc") return sys_.threadOfProcess(pid, tid) == 0;
    return sys_.exists(root_ + "/" + std::to_string(pid) + "/task/" + std::to_string(tid));
}

bool ProcInfo::threadAlive(pid_t tid) {
    return sys_.exists(root_ + "/" + std::to_string(tid));
}

std::vector<pid_t> ProcInfo::threads(pid_t pid) {
    std::vector<std::string> names;
    std::vector<pid_t> tids;
    if (sys_.listDir(root_ + "/" + std::to_string(pid) + "/task", true, &names) != 0) return tids;
    for (const auto& n : names) tids.push_back(static_cast<pid_t>(atoi(n.c_str())));
    return tids;
}

std::string ProcInfo::command(pid_t pid) {
    std::string comm;
    if (sys_.readFile(root_ + "/" + std::to_string(pid) + "/comm", &comm) != 0) return "?";
    while (!comm.empty() && comm.back() == '\n') comm.pop_back();
    return comm;
}

std::vector<gid_t> ProcInfo::groups(pid_t pid) {
    std::string status;
    std::vector<gid_t> gids;
    if (sys_.readFile(root_ + "/" + std::to_string(pid) + "/status", &status) != 0) return gids;
    std::istringstream in(status);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("Groups:", 0) != 0) continue;
        std::istringstream g(line.substr(7));
        long v;
        while (g >> v) gids.push_back(static_cast<gid_t>(v));
    }
    return gids;
}

}  // namespace arbd
