#include "sys.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sstream>

namespace arbd {
namespace {

class RealSys final : public Sys {
  public:
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
    int makeDir(const std::string& path) override { return mkdir(path.c_str(), 0755) ? errno : 0; }
    int removeDir(const std::string& path) override { return rmdir(path.c_str()) ? errno : 0; }
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

  private:
    static constexpr int kMaxCpus = 8192;
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

bool ProcInfo::threadBelongsTo(pid_t pid, pid_t tid) {
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
