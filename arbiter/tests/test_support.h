// Helpers for the arbiter tests: temporary directories, a core-arbiter child process, forked client
// processes, and polling with a deadline (for conditions another process makes true). Everything is
// RAII: children are killed and reaped, directories removed, on success and on failure alike.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "arbproto/io.h"

namespace arbtest {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it.
class TempDir {
  public:
    TempDir() {
        const char* base = getenv("TMPDIR");
        std::string pattern = std::string(base && *base ? base : "/tmp") + "/arbiter-test-XXXXXX";
        std::vector<char> buf(pattern.begin(), pattern.end());
        buf.push_back('\0');
        if (mkdtemp(buf.data())) path_ = buf.data();
    }
    ~TempDir() {
        std::error_code ignored;
        if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
    }
    const std::string& path() const { return path_; }
    std::string operator/(const std::string& name) const { return path_ + "/" + name; }

  private:
    std::string path_;
};

inline std::string readText(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

inline void writeText(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
}

// Polls `condition` until it holds or `timeout` passes. For conditions another process or thread
// makes true; the poll interval only bounds the reaction time, it is not a synchronisation.
inline bool waitUntil(const std::function<bool()>& condition,
                      std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!condition()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

inline bool canConnect(const std::string& path) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
    bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    close(fd);
    return ok;
}

// True when an arbiter answers on `path` (an observer hello gets its reply): it has finished
// starting, not merely bound its socket.
inline bool answers(const std::string& path) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
    timeval timeout{2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    if (ok) {
        arbproto::Hello hello;
        hello.role = arbproto::Role::kObserver;
        std::string error;
        arbproto::ServerStream stream(fd);
        arbproto::ServerMessage reply;
        ok = arbproto::sendMessage(fd, hello, &error) &&
             stream.next(&reply, &error) == arbproto::ServerStream::Result::kMessage &&
             std::holds_alternative<arbproto::HelloReply>(reply);
    }
    close(fd);
    return ok;
}

// A forked child that dies with the test process (PR_SET_PDEATHSIG) and is killed + reaped by the
// destructor if still running.
class Child {
  public:
    Child() = default;
    explicit Child(const std::function<int()>& body) {
        pid_t parent = getpid();
        pid_ = fork();
        if (pid_ == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) _exit(99);
            _exit(body());
        }
    }
    Child(Child&& other) noexcept : pid_(other.pid_) { other.pid_ = -1; }
    Child& operator=(Child&& other) noexcept {
        std::swap(pid_, other.pid_);
        return *this;
    }
    ~Child() { kill9(); }
    pid_t pid() const { return pid_; }
    void kill9() {
        if (pid_ <= 0) return;
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }
    // Waits for a normal exit; returns the exit status (or -1).
    int wait() {
        int status = 0;
        if (pid_ <= 0 || waitpid(pid_, &status, 0) != pid_) return -1;
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    bool signal(int sig) { return pid_ > 0 && kill(pid_, sig) == 0; }

  private:
    pid_t pid_ = -1;
};

// How an ArbiterProcess is started beyond its arguments: a command it runs under (e.g. setpriv)
// and a file its stderr goes to (else the test's own).
struct ArbiterLaunch {
    std::vector<std::string> wrapper;
    std::string stderrPath;
};

// core-arbiter run as a child (path from the build: ARBITER_BIN). Waits until the socket accepts,
// at most `readyWithin` (a failure bound only).
class ArbiterProcess {
  public:
    ArbiterProcess(const std::string& socket, std::vector<std::string> args,
                   std::chrono::milliseconds readyWithin = std::chrono::milliseconds(10000),
                   const ArbiterLaunch& launch = {})
        : socket_(socket) {
        args.insert(args.begin(), {ARBITER_BIN, "--socket", socket});
        args.insert(args.begin(), launch.wrapper.begin(), launch.wrapper.end());
        child_ = Child([&] {
            if (!launch.stderrPath.empty()) {
                const int fd = open(launch.stderrPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
                if (fd < 0 || dup2(fd, 2) < 0) return 126;
                close(fd);
            }
            std::vector<char*> argv;
            for (auto& a : args) argv.push_back(a.data());
            argv.push_back(nullptr);
            execv(argv[0], argv.data());
            return 127;
        });
        ready_ = waitUntil([&] { return answers(socket_); }, readyWithin);
    }
    ~ArbiterProcess() { stop(); }
    bool ready() const { return ready_; }
    pid_t pid() const { return child_.pid(); }
    // SIGTERM and wait: the clean shutdown path. Returns the exit status.
    int stop() {
        if (child_.pid() <= 0) return -1;
        child_.signal(SIGTERM);
        return child_.wait();
    }
    void kill9() { child_.kill9(); }

  private:
    std::string socket_;
    Child child_;
    bool ready_ = false;
};

// Number of open descriptors of a process.
inline int openFds(pid_t pid) {
    int n = 0;
    for (auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
        (void)e;
        n++;
    }
    return n;
}

// A field of /proc/<pid>/status in kB (e.g. "VmRSS").
inline long statusKb(pid_t pid, const std::string& field) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(field + ":", 0) == 0) return atol(line.c_str() + field.size() + 1);
    return -1;
}

// Runs a command, returns exit status and stdout+stderr.
inline int runCommand(const std::string& command, std::string* output) {
    FILE* p = popen((command + " 2>&1").c_str(), "r");
    if (!p) return -1;
    char buf[4096];
    size_t n;
    output->clear();
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) output->append(buf, n);
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace arbtest
