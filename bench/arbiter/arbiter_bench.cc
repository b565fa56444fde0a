// arbiter-bench: latency from setRequestedCores() to the carrier returning from
// blockUntilCoreAvailable() on its new core, through a real core-arbiter child process.
//   idle:    one idle managed core, one blocked carrier.
//   reclaim: the only managed core is held by a lower-priority process whose carrier polls
//            mustReleaseCore() like a dispatcher and gives the core back cooperatively.
// Usage: see kUsage. The scratch directory (socket, fake cgroup tree) is removed on every exit,
// an interrupted run's included.
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "arbclient/client.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kUsage =
    "usage: arbiter-bench [--iterations N] [--gap-us US] [--backend fake|cgroup-v1|cgroup-v2|"
    "affinity]\n"
    "                     [--cgroup-root DIR] [--arbiter PATH]\n"
    "Grant latency through a real core-arbiter (started with CPUs 0-2, CPU 0 unmanaged): from a\n"
    "request to the carrier running on its new core, for an idle core and for one taken back\n"
    "cooperatively from a lower-priority process, beside the machine's floor (two socket hops\n"
    "between sleeping threads). Medians, p90, p99 and minimum in microseconds.\n"
    "  --iterations N    samples of each (default 2000, at least 10)\n"
    "  --gap-us US       pause before each sample, so that every carrier is asleep (default 300)\n"
    "  --backend B       the arbiter's backend (default fake: pins nothing); cgroup-v1 and\n"
    "                    cgroup-v2 need root, --cgroup-root and three CPUs\n"
    "  --cgroup-root DIR the arbiter's cgroup root (default: a directory in the scratch one)\n"
    "  --arbiter PATH    the core-arbiter binary (default: the one beside arbiter-bench)\n"
    "Scratch files go to $TMPDIR if set, else /dev/shm, else /tmp.\n";

// Set by SIGINT/SIGTERM: the sampling loop stops and the run cleans up as after its last sample.
volatile sig_atomic_t gInterrupted = 0;

// The scratch directory, removed with everything in it on every way out of main().
class ScratchDir {
  public:
    ScratchDir() {
        const char* env = getenv("TMPDIR");
        std::string base = env && *env                                 ? env
                           : std::filesystem::is_directory("/dev/shm") ? "/dev/shm"
                                                                       : "/tmp";
        std::string pattern = base + "/arbiter-bench-XXXXXX";
        std::vector<char> tmpl(pattern.begin(), pattern.end());
        tmpl.push_back('\0');
        if (mkdtemp(tmpl.data())) path_ = tmpl.data();
    }
    ~ScratchDir() {
        std::error_code ignored;
        if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
    }
    const std::string& path() const { return path_; }

  private:
    std::string path_;
};

// A whole non-negative decimal number that fits an int, or -1.
int parseCount(const std::string& text) {
    if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != text.npos)
        return -1;
    return std::stoi(text);
}

int64_t nowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
        .count();
}

// One idle dispatcher pass. Yielding lets woken threads (the arbiter, other carriers) run at once
// on a machine with fewer cpus than busy threads; mustReleaseCore is still checked every pass.
void dispatcherPass() {
    sched_yield();
}

// A carrier that runs a spin "dispatcher" on its core until asked to release it. The grant time is
// taken the instant blockUntilCoreAvailable returns.
class Carrier {
  public:
    explicit Carrier(arbclient::CoreArbiterClient& client)
        : client_(client), thread_([this] { run(); }) {}
    ~Carrier() {
        stop_.store(true);
        client_.shutdown();
        thread_.join();
    }
    int core() const { return core_.load(std::memory_order_acquire); }
    bool blocked() const { return blocked_.load(std::memory_order_acquire); }
    int64_t grantedAt() const { return grantedAt_.load(std::memory_order_acquire); }

  private:
    void run() {
        while (!stop_.load()) {
            blocked_.store(true, std::memory_order_release);
            int core = client_.blockUntilCoreAvailable();
            int64_t at = nowNs();
            blocked_.store(false, std::memory_order_release);
            if (core < 0) return;
            grantedAt_.store(at, std::memory_order_release);
            core_.store(core, std::memory_order_release);
            while (!stop_.load(std::memory_order_relaxed) && !client_.mustReleaseCore(core))
                dispatcherPass();
            core_.store(-1, std::memory_order_release);
            client_.releaseCore(core);
        }
    }
    arbclient::CoreArbiterClient& client_;
    std::atomic<bool> stop_{false}, blocked_{false};
    std::atomic<int> core_{-1};
    std::atomic<int64_t> grantedAt_{0};
    std::thread thread_;
};

// Waits (politely: the measured interval is timed by the carrier, not by this loop) for `cond`.
template <typename F>
bool waitFor(F cond, int timeoutMs = 5000) {
    auto deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
    while (!cond()) {
        if (Clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    return true;
}

std::array<uint32_t, 8> at(int level, uint32_t n) {
    std::array<uint32_t, 8> r{};
    r[level] = n;
    return r;
}

struct Stats {
    double median, p90, p99, min;
};

Stats summarize(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    auto q = [&](double f) { return v[std::min(v.size() - 1, static_cast<size_t>(f * v.size()))]; };
    return {q(0.5), q(0.9), q(0.99), v.front()};
}

// One sample: the high-priority process asks for `cores` cores at priority 0; the time is until the
// last of its carriers runs on its core. Then it asks for none and waits until its carriers block
// again. With one idle core and the other held by the low-priority process, cores = 1 measures an
// idle grant and cores = 2 a grant that needs a cooperative reclaim.
bool measure(arbclient::CoreArbiterClient& high, std::vector<std::unique_ptr<Carrier>>& carriers,
             const Carrier& low, uint32_t cores, int gapUs, double* us) {
    auto idle = [&] {
        for (auto& c : carriers)
            if (!c->blocked() || c->core() >= 0) return false;
        return low.core() >= 0;
    };
    if (!waitFor(idle)) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(gapUs));  // the arbiter sees every BLOCK
    std::string error;
    int64_t start = nowNs();
    if (!high.setRequestedCores(at(0, cores), 0, cores, &error)) return false;
    auto running = [&] {
        uint32_t n = 0;
        for (auto& c : carriers) n += c->core() >= 0;
        return n == cores;
    };
    if (!waitFor(running)) return false;
    int64_t last = 0;
    for (auto& c : carriers)
        if (c->core() >= 0) last = std::max(last, c->grantedAt());
    *us = (last - start) / 1000.0;
    return high.setRequestedCores(at(0, 0), 0, 0, &error);
}

// The floor on this machine: two blocking socket hops through sleeping threads (requester -> relay
// -> waiter), the wake-ups an idle grant needs (client -> arbiter -> carrier) with nothing done in
// between. Measured interleaved with the grants so all see the same background load.
class TwoHops {
  public:
    TwoHops() {
        ok_ = socketpair(AF_UNIX, SOCK_STREAM, 0, a_) == 0 &&
              socketpair(AF_UNIX, SOCK_STREAM, 0, b_) == 0;
        relay_ = std::thread([this] {
            char c;
            while (read(a_[1], &c, 1) == 1 && c && write(b_[0], &c, 1) == 1) {
            }
            if (write(b_[0], &c, 1) < 0) return;
        });
        waiter_ = std::thread([this] {
            char c;
            while (read(b_[1], &c, 1) == 1 && c) {
                woke_.store(nowNs());
                if (write(b_[1], &c, 1) != 1) return;
            }
        });
    }
    ~TwoHops() {
        char zero = 0;
        if (write(a_[0], &zero, 1) < 0) {
        }
        relay_.join();
        waiter_.join();
        for (int fd : {a_[0], a_[1], b_[0], b_[1]}) close(fd);
    }
    bool sample(int gapUs, double* us) {
        std::this_thread::sleep_for(std::chrono::microseconds(gapUs));
        char c = 1;
        int64_t start = nowNs();
        if (!ok_ || write(a_[0], &c, 1) != 1 || read(b_[0], &c, 1) != 1) return false;
        *us = (woke_.load() - start) / 1000.0;
        return true;
    }

  private:
    int a_[2], b_[2];
    bool ok_;
    std::atomic<int64_t> woke_{0};
    std::thread relay_, waiter_;
};

// The core-arbiter under test, killed and reaped with this object. Waits until it listens on
// `socket` or has exited (a bad option, a backend it cannot set up: it said why on stderr).
class ArbiterChild {
  public:
    ArbiterChild(std::vector<std::string> args, const std::string& socket) {
        pid_ = fork();
        if (pid_ == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            std::vector<char*> argv;
            for (auto& a : args) argv.push_back(a.data());
            argv.push_back(nullptr);
            execvp(argv[0], argv.data());
            fprintf(stderr, "arbiter-bench: cannot run %s: %s\n", argv[0], strerror(errno));
            _exit(127);
        }
        if (pid_ < 0) {
            forkError_ = errno;
            return;
        }
        waitFor([&] {
            if (waitpid(pid_, &status_, WNOHANG) == pid_) {
                pid_ = -1;  // reaped: nothing left to stop
                return true;
            }
            int fd = socket_unix();
            sockaddr_un addr{};
            addr.sun_family = AF_UNIX;
            snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", socket.c_str());
            bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
            close(fd);
            return ok;
        });
    }
    ~ArbiterChild() {
        if (pid_ <= 0) return;
        kill(pid_, SIGTERM);
        waitpid(pid_, nullptr, 0);
    }
    // Why the arbiter is not there (it exited, or could not be started), or empty.
    std::string gone() const {
        if (pid_ > 0) return "";
        if (forkError_) return std::string("cannot fork core-arbiter: ") + strerror(forkError_);
        if (WIFEXITED(status_))
            return "core-arbiter exited with status " + std::to_string(WEXITSTATUS(status_));
        return "core-arbiter died of signal " + std::to_string(WTERMSIG(status_));
    }

  private:
    static int socket_unix() { return socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0); }
    pid_t pid_;
    int status_ = 0;     // waitpid's, once it exited
    int forkError_ = 0;  // errno of a failed fork (then it never ran)
};

}  // namespace

// The core-arbiter in this program's own directory: both are built into the same bin/, and a copy
// of that directory taken elsewhere (another machine, a chroot) keeps working, where a path fixed
// at build time would name a tree that is not there.
std::string arbiterBesideThisProgram() {
    std::error_code ec;
    std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) return "core-arbiter";  // no procfs: let execvp search PATH
    return (self.parent_path() / "core-arbiter").string();
}

int main(int argc, char** argv) {
    int iterations = 2000, gapUs = 300;
    std::string backend = "fake", cgroupRoot, arbiterPath = arbiterBesideThisProgram();
    for (int i = 1; i < argc; i++) {
        std::string k = argv[i];
        if (k == "-h" || k == "--help") {
            fputs(kUsage, stdout);
            return 0;
        }
        if (k != "--iterations" && k != "--gap-us" && k != "--backend" && k != "--cgroup-root" &&
            k != "--arbiter") {
            fprintf(stderr, "arbiter-bench: unknown option '%s' (see --help)\n", k.c_str());
            return 2;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "arbiter-bench: %s needs a value (see --help)\n", k.c_str());
            return 2;
        }
        std::string v = argv[++i];
        if (k == "--iterations" || k == "--gap-us") {
            const int n = parseCount(v);
            if (n < 0 || (k == "--iterations" && n < 10)) {
                fprintf(stderr, "arbiter-bench: %s: '%s' is not %s\n", k.c_str(), v.c_str(),
                        k == "--iterations" ? "a whole number of at least 10"
                                            : "a whole number of microseconds");
                return 2;
            }
            (k == "--iterations" ? iterations : gapUs) = n;
        } else if (k == "--backend") {
            backend = v;
        } else if (k == "--cgroup-root") {
            cgroupRoot = v;
        } else {
            arbiterPath = v;
        }
    }
    ScratchDir scratch;
    if (scratch.path().empty()) {
        fprintf(stderr, "arbiter-bench: cannot make a scratch directory: %s\n", strerror(errno));
        return 1;
    }
    struct sigaction stop {};
    stop.sa_handler = [](int) { gInterrupted = 1; };
    stop.sa_flags = SA_RESTART;  // the threads' blocking reads go on; the loop looks at the flag
    sigaction(SIGINT, &stop, nullptr);
    sigaction(SIGTERM, &stop, nullptr);
    const std::string dir = scratch.path(), socket = dir + "/arbiter.sock";
    if (cgroupRoot.empty()) cgroupRoot = dir + "/cg";
    int rc = 0;
    {
        // Two managed cores: the low-priority process keeps one, the other is idle.
        ArbiterChild arbiter(
            {arbiterPath, "--socket", socket, "--backend", backend, "--cgroup-root", cgroupRoot,
             "--cpus", "0-2", "--reserve", "1", "--log-level", "error"},
            socket);
        if (std::string why = arbiter.gone(); !why.empty()) {
            fprintf(stderr, "arbiter-bench: %s before it listened\n", why.c_str());
            return 1;
        }
        std::string error;
        auto low = arbclient::CoreArbiterClient::connect(socket, &error);
        auto high = low ? arbclient::CoreArbiterClient::connect(socket, &error) : nullptr;
        if (!high) {
            fprintf(stderr, "arbiter-bench: %s\n", error.c_str());
            return 1;
        }
        Carrier lowCarrier(*low);
        low->setRequestedCores(at(7, 1), 0, 1, &error);
        std::vector<std::unique_ptr<Carrier>> highCarriers;
        for (int i = 0; i < 2; i++) highCarriers.push_back(std::make_unique<Carrier>(*high));
        TwoHops floor;
        std::vector<double> idle, reclaim, hops;
        for (int i = 0; i < iterations && !gInterrupted; i++) {
            double us;
            if (!floor.sample(gapUs, &us)) break;
            hops.push_back(us);
            if (!measure(*high, highCarriers, lowCarrier, 1, gapUs, &us)) break;
            idle.push_back(us);
            if (!measure(*high, highCarriers, lowCarrier, 2, gapUs, &us)) break;
            reclaim.push_back(us);
        }
        if (gInterrupted) {
            fprintf(stderr, "arbiter-bench: interrupted after %zu iterations\n", reclaim.size());
            rc = 130;
        } else if (reclaim.size() < static_cast<size_t>(iterations)) {
            fprintf(stderr, "arbiter-bench: a measurement timed out after %zu iterations\n",
                    reclaim.size());
            rc = 1;
        }
        if (!reclaim.empty()) {
            Stats a = summarize(idle), b = summarize(reclaim), f = summarize(hops);
            printf("backend %s, %zu iterations (interleaved), %u cpus online\n", backend.c_str(),
                   reclaim.size(), std::thread::hardware_concurrency());
            printf(
                "%-34s median %7.1f us  p90 %7.1f us  p99 %7.1f us  min %6.1f us  (goal <= 20 "
                "us)\n",
                "grant, idle core:", a.median, a.p90, a.p99, a.min);
            printf(
                "%-34s median %7.1f us  p90 %7.1f us  p99 %7.1f us  min %6.1f us  (goal <= 40 "
                "us)\n",
                "grant, cooperative reclaim:", b.median, b.p90, b.p99, b.min);
            printf(
                "%-34s median %7.1f us  p90 %7.1f us  p99 %7.1f us  min %6.1f us  (machine "
                "floor)\n",
                "two idle socket hops, no arbiter:", f.median, f.p90, f.p99, f.min);
        }
    }
    return rc;
}
