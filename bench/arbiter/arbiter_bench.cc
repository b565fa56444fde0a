// arbiter-bench: latency from setRequestedCores() to the carrier returning from
// blockUntilCoreAvailable() on its new core, through a real core-arbiter child process.
//   idle:    one idle managed core, one blocked carrier.
//   reclaim: the only managed core is held by a lower-priority process whose carrier polls
//            mustReleaseCore() like a dispatcher and gives the core back cooperatively.
// Usage: arbiter-bench [--iterations N] [--gap-us US] [--backend fake|cgroup-v1|affinity]
//                      [--cgroup-root DIR] [--arbiter PATH]
// The fake backend (default) pins nothing; --backend cgroup-v1 needs root and a cpuset
// --cgroup-root.
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
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "arbclient/client.h"

namespace {

using Clock = std::chrono::steady_clock;

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

class ArbiterChild {
  public:
    ArbiterChild(std::vector<std::string> args, const std::string& socket) {
        pid_ = fork();
        if (pid_ == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            std::vector<char*> argv;
            for (auto& a : args) argv.push_back(a.data());
            argv.push_back(nullptr);
            execv(argv[0], argv.data());
            _exit(127);
        }
        waitFor([&] {
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
        kill(pid_, SIGTERM);
        waitpid(pid_, nullptr, 0);
    }

  private:
    static int socket_unix() { return socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0); }
    pid_t pid_;
};

}  // namespace

int main(int argc, char** argv) {
    int iterations = 2000, gapUs = 300;
    std::string backend = "fake", cgroupRoot, arbiterPath = ARBITER_BIN;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string k = argv[i], v = argv[i + 1];
        if (k == "--iterations")
            iterations = std::max(10, atoi(v.c_str()));
        else if (k == "--backend")
            backend = v;
        else if (k == "--cgroup-root")
            cgroupRoot = v;
        else if (k == "--arbiter")
            arbiterPath = v;
        else {
            fprintf(stderr, "arbiter-bench: unknown option %s\n", k.c_str());
            return 2;
        }
    }
    // tmpfs when there is one: the fake tree's bookkeeping files are then cheap to rewrite, as
    // cgroupfs writes are, instead of costing a disk filesystem's truncations.
    std::string base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    std::string pattern = base + "/arbiter-bench-XXXXXX";
    std::vector<char> tmpl(pattern.begin(), pattern.end());
    tmpl.push_back('\0');
    if (!mkdtemp(tmpl.data())) return 1;
    std::string dir = tmpl.data(), socket = dir + "/arbiter.sock";
    if (cgroupRoot.empty()) cgroupRoot = dir + "/cg";
    int rc = 0;
    {
        // Two managed cores: the low-priority process keeps one, the other is idle.
        ArbiterChild arbiter(
            {arbiterPath, "--socket", socket, "--backend", backend, "--cgroup-root", cgroupRoot,
             "--cpus", "0-2", "--reserve", "1", "--log-level", "error"},
            socket);
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
        for (int i = 0; i < iterations; i++) {
            double us;
            if (!floor.sample(gapUs, &us)) break;
            hops.push_back(us);
            if (!measure(*high, highCarriers, lowCarrier, 1, gapUs, &us)) break;
            idle.push_back(us);
            if (!measure(*high, highCarriers, lowCarrier, 2, gapUs, &us)) break;
            reclaim.push_back(us);
        }
        if (reclaim.size() < static_cast<size_t>(iterations)) {
            fprintf(stderr, "arbiter-bench: a measurement timed out after %zu iterations\n",
                    reclaim.size());
            rc = 1;
        }
        if (!reclaim.empty()) {
            Stats a = summarize(idle), b = summarize(reclaim), f = summarize(hops);
            printf("backend %s, %d iterations (interleaved), %u cpus online\n", backend.c_str(),
                   iterations, std::thread::hardware_concurrency());
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
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
    return rc;
}
