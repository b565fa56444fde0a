// The verdicts. Only a problem that keeps arbrun from doing its job (no runtime, no library) is a
// FAIL; what merely costs speed or isolation, or makes arbrun run standalone, is a WARN.
#include "doctor_checks.h"

#include "arbmounts/cgroup_mounts.h"

namespace arbrun {
namespace {

using Verdict = Check::Verdict;

// wrfsbase vs arch_prctl on every switch: speed only. The measured cost goes in the line because
// the system call's price varies a hundredfold between hosts (~150 ns on bare metal, microseconds
// in some VMs), and only the figure tells whether it matters for a given program.
Check checkFsgsbase(SystemProbe& probe) {
    const uint64_t ns = probe.threadPointerWriteNs();
    const std::string measured = ns ? "measured " + std::to_string(ns) + " ns" : "not measured";
    if (probe.hasFsgsbase()) {
        return {
            Verdict::ok, "fsgsbase",
            "available: a context switch sets the thread pointer with wrfsbase (" + measured + ")"};
    }
    return {Verdict::warn, "fsgsbase",
            "not available: every context switch sets the thread pointer with the arch_prctl "
            "system call (" +
                measured +
                "; wrfsbase takes ~13 ns), and a server whose threads take turns makes one per "
                "request (a thread woken where it waited makes none); fix: Linux >= 5.9 on a CPU "
                "with FSGSBASE (Intel Ivy Bridge, AMD Zen or later), not booted with "
                "'nofsgsbase'"};
}

// The runtime refuses to start on a glibc its probe rejects: arbrun then changes nothing.
Check checkGlibc(SystemProbe& probe) {
    const GlibcFacts glibc = probe.glibc();
    if (!glibc.checked) {
        return {Verdict::warn, "glibc", "not checked: " + glibc.why + " (see the preload line)"};
    }
    const std::string version = glibc.version.empty() ? "unknown" : glibc.version;
    if (glibc.supported) {
        return {Verdict::ok, "glibc", version + ": accepted by the runtime's thread-layout probe"};
    }
    return {Verdict::fail, "glibc",
            version + ": " + glibc.why +
                "; the runtime will not start and programs run natively under arbrun; fix: run "
                "on glibc 2.36 (Debian 12) or teach runtime/src/glibc_layout.* this version"};
}

// System calls a program issues itself (libgomp's futexes, JIT code): without syscall user
// dispatch they block their carrier until the monitor lends the core away. Speed only.
Check checkSyscalls(SystemProbe& probe) {
    const SyscallFacts facts = probe.syscalls();
    if (!facts.checked) {
        return {Verdict::warn, "syscalls", "not checked: " + facts.why + " (see the preload line)"};
    }
    if (facts.caught) {
        return {Verdict::ok, "syscalls",
                "caught: system calls a program issues outside libc (OpenMP's futex waits, JIT "
                "code) wait at user level like the pthread API (syscall user dispatch)"};
    }
    return {Verdict::warn, "syscalls",
            "not caught (" + facts.why +
                "): a program that waits with its own system calls (OpenMP, JIT code) blocks "
                "a carrier until its core is lent to a spare carrier, and spins on it meanwhile; "
                "such programs may run much slower than natively; fix: Linux >= 5.11"};
}

using arbmounts::CpusetLayout;

// "cpuset" as a word of a file's text, false when it could not be read.
bool listsCpuset(const std::optional<std::string>& text) {
    return text && arbmounts::listsController(*text, "cpuset");
}

// What the mount table offers the arbiter's cpuset backends, as core-arbiter --backend auto sees
// it (arbmounts::cpusetLayout); the cgroups and moves checks read it. Nullopt when
// /proc/self/mountinfo cannot be read.
std::optional<CpusetLayout> readCpusetLayout(SystemProbe& probe) {
    const std::optional<std::string> mountinfo = probe.readFile("/proc/self/mountinfo");
    if (!mountinfo) return std::nullopt;
    return arbmounts::cpusetLayout(
        arbmounts::parseCgroupMounts(*mountinfo),
        [&probe](const std::string& path) { return probe.readFile(path); });
}

// What core-arbiter --backend auto can use, in its own order: v2 with cpuset offered at its root,
// then a v1 cpuset hierarchy, then affinity only.
Check checkCgroups(SystemProbe& probe, const std::optional<CpusetLayout>& layout) {
    if (!layout) {
        return {Verdict::warn, "cgroups",
                "cannot read /proc/self/mountinfo: cpuset support unknown; core-arbiter may "
                "only have --backend affinity (no isolation)"};
    }
    const std::string& v1Cpuset = layout->v1Cpuset;
    const bool v2Offers = !layout->v2Cpuset.empty();
    const std::string& v2 = v2Offers ? layout->v2Cpuset : layout->v2;
    const bool v2Enables = v2Offers && listsCpuset(probe.readFile(v2 + "/cgroup.subtree_control"));
    const std::string v1Alternative =
        v1Cpuset.empty() ? "" : ", or use --backend cgroup-v1 (v1 cpuset at " + v1Cpuset + ")";
    if (v2Enables) {
        return {Verdict::ok, "cgroups",
                "cgroup v2 at " + v2 +
                    " with cpuset enabled in cgroup.subtree_control: core-arbiter --backend "
                    "auto uses cgroup-v2 (isolated cores)"};
    }
    if (v2Offers) {
        return {Verdict::warn, "cgroups",
                "cgroup v2 at " + v2 +
                    " offers cpuset but its cgroup.subtree_control does not enable it: "
                    "core-arbiter --backend auto picks cgroup-v2 and cannot create its sets; "
                    "fix: echo +cpuset > " +
                    v2 + "/cgroup.subtree_control (as root)" + v1Alternative};
    }
    if (!v1Cpuset.empty()) {
        const std::string v2Note =
            v2.empty() ? "" : " (cgroup v2 at " + v2 + " has no cpuset controller)";
        return {Verdict::ok, "cgroups",
                "cgroup v1 cpuset at " + v1Cpuset + v2Note +
                    ": core-arbiter --backend auto uses cgroup-v1 (isolated cores)"};
    }
    const std::string found =
        v2.empty() ? "no cgroup v2 mount and no v1 cpuset hierarchy"
                   : "cgroup v2 at " + v2 + " has no cpuset controller and no v1 cpuset is mounted";
    return {Verdict::warn, "cgroups",
            found +
                ": core-arbiter can only use --backend affinity (cores not isolated from other "
                "processes); fix: enable the cpuset controller (cgroup v2: echo +cpuset > "
                "<mount>/cgroup.subtree_control) or mount -t cgroup -o cpuset cpuset <dir>"};
}

// A core hand-over moves two threads between cpusets. The kernel's lock for such moves is a
// per-cpu rwsem whose writer, after a quiet spell, waits for an RCU grace period: ~6 ms on a
// 2-vCPU VM, against ~5 us for a move within a few milliseconds of the last one. favordynmods
// (on any hierarchy: the lock is shared) keeps it in the mode without that wait.
Check checkCgroupMoves(const std::optional<CpusetLayout>& layout) {
    if (!layout) {
        return {Verdict::warn, "moves", "cannot read /proc/self/mountinfo: favordynmods unknown"};
    }
    if (layout->v1Cpuset.empty() && layout->v2Cpuset.empty()) {
        return {Verdict::ok, "moves", "no cpuset hierarchy: the arbiter moves no threads"};
    }
    if (!layout->favoring.empty()) {
        return {Verdict::ok, "moves",
                "favordynmods is on (" + layout->favoring +
                    "): moving a carrier between cpusets never waits for the kernel"};
    }
    const std::string& v2 = layout->v2Cpuset.empty() ? layout->v2 : layout->v2Cpuset;
    return {Verdict::warn, "moves",
            "favordynmods is off: after a quiet spell, moving a thread between cpusets waits for "
            "an RCU grace period (milliseconds), so a core hand-over then takes that long; fix "
            "(as root, Linux >= 6.0): " +
                (v2.empty() ? std::string("mount -t cgroup2 -o favordynmods cgroup2 <dir>")
                            : "mount -o remount,favordynmods " + v2) +
                " (stays on until reboot; fork and exit get a little slower)"};
}

// Root matters only for starting the arbiter with cpusets; with one already running it is moot.
Check checkRoot(SystemProbe& probe, const ArbiterFacts& arbiter) {
    const uid_t uid = probe.effectiveUid();
    if (uid == 0) {
        return {Verdict::ok, "root", "running as root: core-arbiter can use the cpuset backends"};
    }
    const std::string who = "not root (uid " + std::to_string(uid) + ")";
    if (arbiter.state == ArbiterFacts::State::running) {
        return {Verdict::ok, "root",
                who +
                    ": fine, running programs under arbrun needs no root and the core arbiter "
                    "is already running"};
    }
    return {Verdict::warn, "root",
            who +
                ": core-arbiter needs root for the cpuset backends (isolated cores); "
                "unprivileged it has only --backend affinity; running programs needs no root; "
                "fix: start core-arbiter as root (packaging/core-arbiter.service)"};
}

// Without an arbiter arbrun still works, standalone; an arbiter that answers wrongly is broken.
Check checkArbiter(const ArbiterFacts& a, const std::string& path) {
    using State = ArbiterFacts::State;
    switch (a.state) {
        case State::running: {
            std::string what = "running at " + path + ": " + std::to_string(a.managedCores) +
                               " managed cores, " + std::to_string(a.processes) + " processes";
            // A core changes hands only as fast as the arbiter runs on the unmanaged CPUs.
            if (a.nice && *a.nice >= 0) {
                return {Verdict::warn, "arbiter",
                        what + "; arbrun gets its cores from it, but at niceness " +
                            std::to_string(*a.nice) +
                            " its hand-overs wait behind whatever else runs on the unmanaged "
                            "cpus; fix: start core-arbiter as root or with CAP_SYS_NICE (it "
                            "lowers its own to --nice, default -10)"};
            }
            if (a.nice) what += ", niceness " + std::to_string(*a.nice);
            return {Verdict::ok, "arbiter", what + "; arbrun gets its cores from it"};
        }
        case State::notRunning:
            return {Verdict::warn, "arbiter",
                    "not running at " + path + " (" + a.error +
                        "): arbrun will run standalone (on its CPUs, no sharing by priority); "
                        "fix: start core-arbiter (as root: systemctl start core-arbiter, or "
                        "core-arbiter --backend auto), or give its socket with --arbiter PATH"};
        case State::unreachable:
            return {Verdict::warn, "arbiter",
                    "cannot connect to " + path + " (" + a.error +
                        "): arbrun will run standalone; fix: the socket is mode 0660, join its "
                        "group or run as its owner"};
        case State::badReply:
            break;
    }
    return {Verdict::fail, "arbiter",
            path + " accepts connections but does not answer as a core arbiter (" + a.error +
                "): arbrun will run standalone; fix: restart core-arbiter from this build"};
}

// The library arbrun would preload, and whether a program actually runs under it.
Check checkPreload(SystemProbe& probe) {
    const PreloadFacts facts = probe.locatePreload();
    if (!facts.found) return {Verdict::fail, "preload", facts.error};
    const PreloadTrial trial = probe.tryPreload(facts.path);
    switch (trial.outcome) {
        case PreloadTrial::Outcome::runtimeStarted:
            return {Verdict::ok, "preload",
                    facts.path + ": /bin/true ran under LD_PRELOAD and the runtime started"};
        case PreloadTrial::Outcome::ranNatively:
            return {Verdict::fail, "preload",
                    facts.path + " loads but the runtime did not start (" + trial.detail +
                        "): programs run natively under arbrun; fix: see the lines above"};
        case PreloadTrial::Outcome::failed:
            break;
    }
    return {Verdict::fail, "preload",
            facts.path + ": /bin/true under LD_PRELOAD failed (" + trial.detail +
                "); fix: rebuild it (cmake --build build --target arbrun_preload) or set "
                "ARBRUN_PRELOAD_LIB to a working copy"};
}

// Not a property of the machine but of programs: which run natively however arbrun is asked, and
// how the user learns it (one line on stderr, from the launcher or the preload library).
Check noteRuntimes() {
    return {Verdict::ok, "runtimes",
            "the JVM, Node.js and CPython run as user threads; Go programs run natively (Go's "
            "runtime schedules its own threads; arbrun recognises them from their ELF and says "
            "so in one line), as do statically linked programs (they never load the library)"};
}

// The words the report and scripts use.
const char* verdictName(Verdict verdict) {
    switch (verdict) {
        case Verdict::ok:
            return "OK";
        case Verdict::warn:
            return "WARN";
        case Verdict::fail:
            break;
    }
    return "FAIL";
}

}  // namespace

// The arbiter is asked first: the root line depends on it.
std::vector<Check> runChecks(SystemProbe& probe, const std::string& arbiterSocket) {
    const ArbiterFacts arbiter = probe.arbiter(arbiterSocket);
    std::vector<Check> checks;
    checks.push_back(checkFsgsbase(probe));
    checks.push_back(checkGlibc(probe));
    checks.push_back(checkSyscalls(probe));
    const std::optional<CpusetLayout> cgroups = readCpusetLayout(probe);  // read once for both
    checks.push_back(checkCgroups(probe, cgroups));
    checks.push_back(checkCgroupMoves(cgroups));
    checks.push_back(checkRoot(probe, arbiter));
    checks.push_back(checkArbiter(arbiter, arbiterSocket));
    checks.push_back(checkPreload(probe));
    checks.push_back(noteRuntimes());
    return checks;
}

// Fixed columns so the verdicts line up and grep finds "^FAIL".
std::string formatReport(const std::vector<Check>& checks) {
    std::string out;
    size_t counts[3] = {0, 0, 0};
    for (const Check& c : checks) {
        std::string verdict = verdictName(c.verdict), name = c.name;
        verdict.resize(std::max<size_t>(verdict.size(), 4), ' ');
        name.resize(std::max<size_t>(name.size(), 8), ' ');
        out += verdict + "  " + name + "  " + c.detail + "\n";
        ++counts[static_cast<size_t>(c.verdict)];
    }
    out += "arbrun doctor: " + std::to_string(counts[0]) + " OK, " + std::to_string(counts[1]) +
           " WARN, " + std::to_string(counts[2]) + " FAIL\n";
    return out;
}

// WARNs cost something but arbrun works; only a FAIL makes the machine unfit.
int doctorExitStatus(const std::vector<Check>& checks) {
    for (const Check& c : checks) {
        if (c.verdict == Verdict::fail) return 1;
    }
    return 0;
}

}  // namespace arbrun
