// `arbrun doctor`'s checks as pure logic over a SystemProbe: what the machine offers comes in
// through the probe (tests pass fakes), verdicts and the report text come out.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace arbrun {

// The glibc the runtime would run on, and its own layout probe's answer (as the runtime reported
// them from a program it was loaded into).
struct GlibcFacts {
    std::string version;     // "2.36"
    bool supported = false;  // arbrt::glibcLayoutSupported()
    std::string why;         // when not supported: the probe's reason; when not checked: why not
    bool checked = true;     // false: no program could be asked (the library is missing or broken)
};

// Whether system calls issued outside libc are caught (arbrt::syscallDispatchAvailable, as the
// runtime reported it from a program it was loaded into).
struct SyscallFacts {
    bool checked = true;  // false: no program could be asked (`why` says why not)
    bool caught = false;
    std::string why;  // when not caught or not checked
};

// What talking to the core arbiter's socket gave.
struct ArbiterFacts {
    enum class State {
        running,      // hello and status answered
        notRunning,   // nothing listens there (ENOENT, ECONNREFUSED)
        unreachable,  // connect failed otherwise (EACCES, ...)
        badReply,     // connected, but the hello/status exchange failed
    };
    State state = State::notRunning;
    std::string error;  // connect's strerror or the exchange's error, when not running
    size_t managedCores = 0, processes = 0;  // from the status reply
    // The arbiter's niceness (its main thread's), when its pid is known (SO_PEERCRED) and readable.
    std::optional<int> nice = std::nullopt;
};

// The preload library as arbrun would find it.
struct PreloadFacts {
    bool found = false;
    std::string path;   // when found
    std::string error;  // when not: locatePreloadLibrary()'s one line, with its fix
};

// Running /bin/true under the preload library (standalone, verbose).
struct PreloadTrial {
    enum class Outcome {
        runtimeStarted,  // it exited 0 and the runtime said it started
        ranNatively,     // it exited 0 but the runtime did not start (the reason is in `detail`)
        failed,          // the library was not loaded, or /bin/true failed
    };
    Outcome outcome = Outcome::failed;
    std::string detail;  // the runtime's or ld.so's first line, or how it ended
};

// Everything `arbrun doctor` asks of the system, behind one interface so tests can answer with
// fakes (a v2-only host, no FSGSBASE, unknown glibc, arbiter down, ...).
class SystemProbe {
  public:
    virtual ~SystemProbe() = default;
    virtual bool hasFsgsbase() = 0;
    // Nanoseconds one write of the thread pointer takes here, made the way the runtime makes it on
    // every switch (wrfsbase where hasFsgsbase(), else the arch_prctl system call); 0 when it
    // could not be measured.
    virtual uint64_t threadPointerWriteNs() = 0;
    virtual GlibcFacts glibc() = 0;
    virtual SyscallFacts syscalls() = 0;
    // A whole file (/proc/self/mountinfo, cgroup.controllers, ...); nullopt when unreadable.
    virtual std::optional<std::string> readFile(const std::string& path) = 0;
    virtual uid_t effectiveUid() = 0;
    virtual ArbiterFacts arbiter(const std::string& socketPath) = 0;
    virtual PreloadFacts locatePreload() = 0;
    virtual PreloadTrial tryPreload(const std::string& library) = 0;
};

// One line of the report.
struct Check {
    enum class Verdict { ok, warn, fail };
    Verdict verdict = Verdict::ok;
    std::string name;    // fsgsbase, glibc, syscalls, cgroups, root, arbiter, preload, runtimes
    std::string detail;  // what was found; when not OK, what it costs and how to fix it
};

// Every check, in report order: fsgsbase, glibc, syscalls, cgroups, root, arbiter, preload, and a
// note on programs with runtimes of their own (runtimes, always OK).
std::vector<Check> runChecks(SystemProbe& probe, const std::string& arbiterSocket);

// "OK    fsgsbase  ..." per check, then a summary line; ends with a newline.
std::string formatReport(const std::vector<Check>& checks);

// 0 when no check FAILed, else 1.
int doctorExitStatus(const std::vector<Check>& checks);

}  // namespace arbrun
