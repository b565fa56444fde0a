// Real answers: files, the arbiter's socket (observer hello + status, as arbctl does), and a trial
// run of /bin/true under the preload library, whose verbose lines also give the glibc and
// system-call facts: the launcher is linked statically (its start-up is every run's), so its own
// libc is not the one programs load, and only the runtime inside a program can probe that.
#include "doctor_system.h"

#include <asm/prctl.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <variant>

#include "arbconfig/report_lines.h"
#include "arbproto/io.h"
#include "child_process.h"
#include "launch.h"
#include "preload_library.h"
#include "scratch_file.h"

namespace arbrun {
namespace {

// A hung arbiter (or something else on its socket) must not hang the doctor.
constexpr int kArbiterTimeoutSeconds = 2;
constexpr int kTrialTimeoutMs = 10'000;

// A connected Unix stream socket, or -1 with errno set.
int connectTo(const std::string& path) {
    sockaddr_un addr{};
    if (path.size() >= sizeof addr.sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    const timeval timeout{kArbiterTimeoutSeconds, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    int rc;
    do {
        rc = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        const int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

// The next arbiter message, which must be a T; an ERROR reply or anything else is an error.
template <typename T>
bool expect(arbproto::ServerStream* stream, T* out, std::string* error) {
    arbproto::ServerMessage reply;
    if (stream->next(&reply, error) != arbproto::ServerStream::Result::kMessage) {
        if (error->empty()) *error = "connection closed";
        return false;
    }
    if (auto* e = std::get_if<arbproto::ErrorReply>(&reply)) {
        *error = "arbiter error: " + e->text;
        return false;
    }
    if (auto* t = std::get_if<T>(&reply)) {
        *out = std::move(*t);
        return true;
    }
    *error = "unexpected reply";
    return false;
}

// HELLO as an observer, then STATUS_QUERY: the protocol's read-only path, as arbctl uses it.
bool askStatus(int fd, ArbiterFacts* facts, std::string* error) {
    arbproto::ServerStream stream(fd);
    arbproto::Hello hello;
    hello.role = arbproto::Role::kObserver;
    arbproto::HelloReply helloReply;
    arbproto::StatusReply status;
    if (!arbproto::sendMessage(fd, hello, error) || !expect(&stream, &helloReply, error) ||
        !arbproto::sendMessage(fd, arbproto::StatusQuery{}, error) ||
        !expect(&stream, &status, error)) {
        return false;
    }
    facts->managedCores = status.managed.size();
    facts->processes = status.processes.size();
    return true;
}

// The niceness of the process at the other end of a Unix socket (its main thread's: the arbiter
// sets its own there, before it has other threads), or nullopt when its pid is not known here
// (another pid namespace) or it is gone.
std::optional<int> peerNice(int fd) {
    ucred peer{};
    socklen_t size = sizeof peer;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 || peer.pid <= 0) {
        return std::nullopt;
    }
    errno = 0;
    const int nice = getpriority(PRIO_PROCESS, id_t(peer.pid));
    if (nice == -1 && errno != 0) return std::nullopt;
    return nice;
}

// The first line of `text` that says something, for a one-line detail.
std::string firstLine(const std::string& text, const std::string& containing = "") {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (!line.empty() && line.find(containing) != std::string::npos) return line;
    }
    return "";
}

// How a finished child ended, in words.
std::string describeEnd(int status) {
    if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) {
        return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
               strsignal(WTERMSIG(status)) + ")";
    }
    return "ended oddly";
}

// Classifies the trial from its exit and what ld.so and the runtime wrote. The runtime's verbose
// line "arbrun: runtime started ..." (preload/src/process/startup.cc) is the sign that it took
// over.
PreloadTrial judgeTrial(const ChildResult& result, const std::string& stderrText) {
    using Outcome = PreloadTrial::Outcome;
    if (result.execFailed) return {Outcome::failed, result.execError};
    if (result.timedOut) return {Outcome::failed, "/bin/true did not finish in 10 s"};
    const std::string ldso = firstLine(stderrText, "cannot be preloaded");
    if (!ldso.empty()) return {Outcome::failed, ldso};
    if (!WIFEXITED(result.waitStatus) || WEXITSTATUS(result.waitStatus) != 0) {
        const std::string line = firstLine(stderrText);
        return {Outcome::failed,
                describeEnd(result.waitStatus) + (line.empty() ? "" : ": " + line)};
    }
    if (stderrText.find(std::string("arbrun: ") + arbconfig::report::kRuntimeStarted) !=
        std::string::npos) {
        return {Outcome::runtimeStarted, ""};
    }
    const std::string why = firstLine(stderrText, "arbrun:");
    return {Outcome::ranNatively, why.empty() ? "no word from the runtime" : why};
}

// What follows `prefix` on the first line of `text` that starts with "arbrun: " + prefix, or
// nullopt when no line does.
std::optional<std::string> reportedAfter(const std::string& text, const char* prefix) {
    const std::string start = std::string("arbrun: ") + prefix;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind(start, 0) == 0) return line.substr(start.size());
    }
    return std::nullopt;
}

// The runtime's glibc line ("glibc 2.36: thread layout accepted", report_lines.h) as facts.
GlibcFacts glibcFromReport(const std::string& text, const PreloadTrial& trial) {
    GlibcFacts facts;
    const std::optional<std::string> rest = reportedAfter(text, arbconfig::report::kGlibc);
    if (!rest) {
        facts.checked = false;
        facts.why = "the runtime said nothing about glibc in the trial run" +
                    (trial.detail.empty() ? std::string() : " (" + trial.detail + ")");
        return facts;
    }
    const size_t accepted = rest->find(arbconfig::report::kLayoutAccepted);
    const size_t rejected = rest->find(arbconfig::report::kLayoutRejected);
    facts.version = rest->substr(0, std::min(accepted, rejected));
    facts.supported = accepted != std::string::npos;
    if (!facts.supported && rejected != std::string::npos) {
        facts.why = rest->substr(rejected + std::strlen(arbconfig::report::kLayoutRejected));
    }
    return facts;
}

class RealSystemProbe final : public SystemProbe {
  public:
    // HWCAP2_FSGSBASE (bit 1): set only when the CPU has the instructions and the kernel enabled
    // them (Linux 5.9+); the auxiliary vector is the same for every process on the machine.
    bool hasFsgsbase() override { return (getauxval(AT_HWCAP2) & 2) != 0; }

    // The least of five rounds of writes of the current value (harmless to this process): the
    // round that interrupts and migrations disturbed least is the closest to the call's own cost.
    uint64_t threadPointerWriteNs() override {
        constexpr int kRounds = 5;
        constexpr int kWrites = 2'000;
        unsigned long fs = 0;
        if (syscall(SYS_arch_prctl, ARCH_GET_FS, &fs) != 0) return 0;
        const bool direct = hasFsgsbase();
        uint64_t best = 0;
        for (int round = 0; round < kRounds; ++round) {
            const auto start = std::chrono::steady_clock::now();
            for (int i = 0; i < kWrites; ++i) {
                if (direct) {
                    asm volatile("wrfsbase %0" ::"r"(fs) : "memory");
                } else if (syscall(SYS_arch_prctl, ARCH_SET_FS, fs) != 0) {
                    return 0;
                }
            }
            const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now() - start)
                                .count();
            const uint64_t perWrite = std::max<uint64_t>(1, uint64_t(ns) / kWrites);
            if (round == 0 || perWrite < best) best = perWrite;
        }
        return best;
    }

    SyscallFacts syscalls() override {
        const Trial* t = defaultTrial();
        if (!t) return {false, false, "the preload library was not found"};
        if (reportedAfter(t->stderrText, arbconfig::report::kSyscallsCaught))
            return {true, true, ""};
        if (auto why = reportedAfter(t->stderrText, arbconfig::report::kSyscallsNotCaught)) {
            return {true, false, *why};
        }
        return {false, false, "the runtime did not start in the trial run"};
    }

    GlibcFacts glibc() override {
        const Trial* t = defaultTrial();
        if (!t) {
            GlibcFacts facts;
            facts.checked = false;
            facts.why = "the preload library was not found";
            return facts;
        }
        return glibcFromReport(t->stderrText, t->verdict);
    }

    std::optional<std::string> readFile(const std::string& path) override {
        std::ifstream in(path);
        if (!in) return std::nullopt;
        std::ostringstream text;
        text << in.rdbuf();
        return text.str();
    }

    uid_t effectiveUid() override { return geteuid(); }

    ArbiterFacts arbiter(const std::string& socketPath) override {
        ArbiterFacts facts;
        const int fd = connectTo(socketPath);
        if (fd < 0) {
            const int err = errno;
            facts.state = err == ENOENT || err == ECONNREFUSED || err == ENOTDIR
                              ? ArbiterFacts::State::notRunning
                              : ArbiterFacts::State::unreachable;
            facts.error = std::strerror(err);
            return facts;
        }
        facts.state = askStatus(fd, &facts, &facts.error) ? ArbiterFacts::State::running
                                                          : ArbiterFacts::State::badReply;
        facts.nice = peerNice(fd);
        close(fd);
        return facts;
    }

    PreloadFacts locatePreload() override {
        PreloadFacts facts;
        facts.found =
            locatePreloadLibrary(std::getenv("ARBRUN_PRELOAD_LIB"), &facts.path, &facts.error);
        return facts;
    }

    PreloadTrial tryPreload(const std::string& library) override { return trial(library).verdict; }

  private:
    struct Trial {
        PreloadTrial verdict;
        std::string stderrText;
    };

    // One trial per library for the whole report: the glibc, syscalls and preload checks read it.
    const Trial& trial(const std::string& library) {
        auto it = trials_.find(library);
        if (it == trials_.end()) it = trials_.emplace(library, runTrial(library)).first;
        return it->second;
    }

    // The trial of the library arbrun would preload, or null when none is found.
    const Trial* defaultTrial() {
        const PreloadFacts facts = locatePreload();
        return facts.found ? &trial(facts.path) : nullptr;
    }

    // /bin/true with the environment `arbrun --standalone --cores 1 --verbose` would give it
    // (standalone: the trial must not take cores from the arbiter), stderr into a scratch file.
    Trial runTrial(const std::string& library) {
        std::string error;
        const int errFd = openScratchFile(&error);
        if (errFd < 0) return {{PreloadTrial::Outcome::failed, error}, ""};
        const int nullFd = open("/dev/null", O_RDWR | O_CLOEXEC);
        arbconfig::Config config;
        config.standalone = true;
        config.verbose = true;
        config.minCores = config.maxCores = 1;
        ChildSpec spec;
        spec.command = {"/bin/true"};
        spec.environment = programEnvironment(config, library, nullptr);
        spec.stdinFd = spec.stdoutFd = nullFd;
        spec.stderrFd = errFd;
        spec.timeoutMs = kTrialTimeoutMs;
        ChildResult result;
        Trial trial;
        if (runChild(spec, &result, &error)) {
            trial.stderrText = readScratchFile(errFd);
            trial.verdict = judgeTrial(result, trial.stderrText);
        } else {
            trial.verdict = {PreloadTrial::Outcome::failed, error};
        }
        if (nullFd >= 0) close(nullFd);
        close(errFd);
        return trial;
    }

    std::map<std::string, Trial> trials_;
};

}  // namespace

std::unique_ptr<SystemProbe> makeSystemProbe() {
    return std::make_unique<RealSystemProbe>();
}

}  // namespace arbrun
