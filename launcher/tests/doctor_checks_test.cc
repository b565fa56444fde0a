// arbrun doctor's verdicts and report from a fake SystemProbe: each kind of host (v2-only, no
// FSGSBASE, unknown glibc, arbiter down, ...) and the exit status.
#include <gtest/gtest.h>

#include <map>

#include "doctor_checks.h"

namespace arbrun {
namespace {

constexpr const char* kSocket = "/run/arbrun/arbiter.sock";

// A healthy cgroup v2 host running as root with an arbiter, unless a test changes a field.
class FakeProbe : public SystemProbe {
  public:
    bool fsgsbase = true;
    uint64_t pointerWriteNs = 12;
    GlibcFacts glibcFacts{"2.36", true, ""};
    std::map<std::string, std::string> files = {
        {"/proc/self/mountinfo",
         "23 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
         "30 23 0:26 / /sys/fs/cgroup rw shared:4 - cgroup2 cgroup2 rw,nsdelegate,favordynmods\n"},
        {"/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n"},
        {"/sys/fs/cgroup/cgroup.subtree_control", "cpuset cpu memory\n"},
    };
    std::string dispatchRefusal;  // empty: syscall user dispatch works
    bool syscallsChecked = true;
    uid_t uid = 0;
    ArbiterFacts arbiterFacts{ArbiterFacts::State::running, "", 6, 2};
    PreloadFacts preload{true, "/opt/arbrun/lib/libarbrun.so", ""};
    PreloadTrial trial{PreloadTrial::Outcome::runtimeStarted, ""};
    std::string askedSocket;

    bool hasFsgsbase() override { return fsgsbase; }
    uint64_t threadPointerWriteNs() override { return pointerWriteNs; }
    SyscallFacts syscalls() override {
        return {syscallsChecked, dispatchRefusal.empty(), dispatchRefusal};
    }
    GlibcFacts glibc() override { return glibcFacts; }
    std::optional<std::string> readFile(const std::string& path) override {
        auto it = files.find(path);
        if (it == files.end()) return std::nullopt;
        return it->second;
    }
    uid_t effectiveUid() override { return uid; }
    ArbiterFacts arbiter(const std::string& socketPath) override {
        askedSocket = socketPath;
        return arbiterFacts;
    }
    PreloadFacts locatePreload() override { return preload; }
    PreloadTrial tryPreload(const std::string&) override { return trial; }
};

// The check called `name`; fails the test when there is none.
Check find(const std::vector<Check>& checks, const std::string& name) {
    for (const Check& c : checks) {
        if (c.name == name) return c;
    }
    ADD_FAILURE() << "no check " << name;
    return {};
}

using Verdict = Check::Verdict;

TEST(RunChecks, HealthyHostIsAllOk) {
    FakeProbe probe;
    const auto checks = runChecks(probe, kSocket);
    ASSERT_EQ(checks.size(), 9u);
    const char* order[] = {"fsgsbase", "glibc",   "syscalls", "cgroups", "moves",
                           "root",     "arbiter", "preload",  "runtimes"};
    for (size_t i = 0; i < checks.size(); ++i) {
        EXPECT_EQ(checks[i].name, order[i]);
        EXPECT_EQ(checks[i].verdict, Verdict::ok) << checks[i].detail;
    }
    EXPECT_EQ(probe.askedSocket, kSocket);
    EXPECT_EQ(doctorExitStatus(checks), 0);
}

TEST(FormatReport, OneLinePerCheckAndASummary) {
    FakeProbe probe;
    probe.fsgsbase = false;
    probe.pointerWriteNs = 3812;
    probe.glibcFacts = {"2.39", false,
                        "glibc 2.39 is not a version whose thread layout arbrun "
                        "knows (2.36)"};
    const auto checks = runChecks(probe, kSocket);
    EXPECT_EQ(
        formatReport(checks),
        "WARN  fsgsbase  not available: every context switch sets the thread pointer with the "
        "arch_prctl system call (measured 3812 ns; wrfsbase takes ~13 ns), and a server whose "
        "threads take turns makes one per request (a thread woken where it waited makes none); "
        "fix: Linux >= 5.9 on a CPU with FSGSBASE (Intel Ivy Bridge, AMD Zen or later), not "
        "booted with 'nofsgsbase'\n"
        "FAIL  glibc     2.39: glibc 2.39 is not a version whose thread layout arbrun knows "
        "(2.36); the runtime will not start and programs run natively under arbrun; fix: run on "
        "glibc 2.36 (Debian 12) or teach runtime/src/glibc_layout.* this version\n"
        "OK    syscalls  caught: system calls a program issues outside libc (OpenMP's futex "
        "waits, JIT code) wait at user level like the pthread API (syscall user dispatch)\n"
        "OK    cgroups   cgroup v2 at /sys/fs/cgroup with cpuset enabled in "
        "cgroup.subtree_control: core-arbiter --backend auto uses cgroup-v2 (isolated cores)\n"
        "OK    moves     favordynmods is on (/sys/fs/cgroup): moving a carrier between cpusets "
        "never waits for the kernel\n"
        "OK    root      running as root: core-arbiter can use the cpuset backends\n"
        "OK    arbiter   running at /run/arbrun/arbiter.sock: 6 managed cores, 2 processes; "
        "arbrun gets its cores from it\n"
        "OK    preload   /opt/arbrun/lib/libarbrun.so: /bin/true ran under LD_PRELOAD and the "
        "runtime started\n"
        "OK    runtimes  the JVM, Node.js and CPython run as user threads; Go programs run "
        "natively (Go's runtime schedules its own threads; arbrun recognises them from their ELF "
        "and says so in one line), as do statically linked programs (they never load the "
        "library)\n"
        "arbrun doctor: 7 OK, 1 WARN, 1 FAIL\n");
    EXPECT_EQ(doctorExitStatus(checks), 1);
}

TEST(RunChecks, NoFsgsbaseIsOnlyAWarning) {
    FakeProbe probe;
    probe.fsgsbase = false;
    const auto checks = runChecks(probe, kSocket);
    const Check c = find(checks, "fsgsbase");
    EXPECT_EQ(c.verdict, Verdict::warn);
    EXPECT_NE(c.detail.find("arch_prctl system call (measured 12 ns;"), std::string::npos);
    EXPECT_EQ(doctorExitStatus(checks), 0);
}

TEST(RunChecks, Fsgsbase_AvailableIsOkWithItsMeasuredCost) {
    FakeProbe probe;
    probe.pointerWriteNs = 9;
    const Check c = find(runChecks(probe, kSocket), "fsgsbase");
    EXPECT_EQ(c.verdict, Verdict::ok);
    EXPECT_EQ(c.detail,
              "available: a context switch sets the thread pointer with wrfsbase "
              "(measured 9 ns)");
}

TEST(RunChecks, Fsgsbase_UnmeasuredCostIsSaid) {
    FakeProbe probe;
    probe.fsgsbase = false;
    probe.pointerWriteNs = 0;
    const Check c = find(runChecks(probe, kSocket), "fsgsbase");
    EXPECT_EQ(c.verdict, Verdict::warn);
    EXPECT_NE(c.detail.find("arch_prctl system call (not measured;"), std::string::npos);
}

TEST(RunChecks, SyscallDispatch_AvailableIsOk) {
    FakeProbe probe;
    const Check c = find(runChecks(probe, kSocket), "syscalls");
    EXPECT_EQ(c.verdict, Verdict::ok);
    EXPECT_NE(c.detail.find("syscall user dispatch"), std::string::npos);
}

TEST(RunChecks, SyscallDispatch_MissingIsAWarningThatSaysWhatIsLost) {
    FakeProbe probe;
    probe.dispatchRefusal = "the kernel refuses syscall user dispatch (Invalid argument)";
    const auto checks = runChecks(probe, kSocket);
    const Check c = find(checks, "syscalls");
    EXPECT_EQ(c.verdict, Verdict::warn);
    EXPECT_NE(c.detail.find("(the kernel refuses syscall user dispatch (Invalid argument))"),
              std::string::npos);
    EXPECT_NE(c.detail.find("blocks a carrier"), std::string::npos);
    EXPECT_NE(c.detail.find("Linux >= 5.11"), std::string::npos);
    EXPECT_EQ(doctorExitStatus(checks), 0);
}

TEST(RunChecks, UnknownGlibcFails) {
    FakeProbe probe;
    probe.glibcFacts = {"", false, "unexpected size of glibc's struct pthread"};
    const auto checks = runChecks(probe, kSocket);
    const Check c = find(checks, "glibc");
    EXPECT_EQ(c.verdict, Verdict::fail);
    EXPECT_EQ(c.detail.rfind("unknown: unexpected size of glibc's struct pthread; the runtime "
                             "will not start",
                             0),
              0u)
        << c.detail;
    EXPECT_EQ(doctorExitStatus(checks), 1);
}

// No program could be asked (the library is missing): a WARN pointing at the preload line, which
// carries the FAIL; not a glibc verdict made up from nothing.
TEST(RunChecks, UncheckedGlibcWarnsAndPointsAtThePreloadLine) {
    FakeProbe probe;
    probe.glibcFacts = {"", false, "the preload library was not found", false};
    const Check c = find(runChecks(probe, kSocket), "glibc");
    EXPECT_EQ(c.verdict, Verdict::warn);
    EXPECT_EQ(c.detail, "not checked: the preload library was not found (see the preload line)");
}

TEST(RunChecks, UncheckedSyscallsWarnAndPointAtThePreloadLine) {
    FakeProbe probe;
    probe.syscallsChecked = false;
    probe.dispatchRefusal = "the runtime did not start in the trial run";
    const Check c = find(runChecks(probe, kSocket), "syscalls");
    EXPECT_EQ(c.verdict, Verdict::warn);
    EXPECT_EQ(c.detail,
              "not checked: the runtime did not start in the trial run (see the preload line)");
}

TEST(RunChecks, V2OnlyHostWithCpusetAvailableButNotEnabled) {
    FakeProbe probe;
    probe.files["/sys/fs/cgroup/cgroup.subtree_control"] = "cpu memory\n";
    const Check c = find(runChecks(probe, kSocket), "cgroups");
    EXPECT_EQ(c.verdict, Verdict::warn);
    EXPECT_NE(c.detail.find("offers cpuset but its cgroup.subtree_control does not enable it"),
              std::string::npos)
        << c.detail;
    EXPECT_NE(c.detail.find("fix: echo +cpuset > /sys/fs/cgroup/cgroup.subtree_control"),
              std::string::npos)
        << c.detail;
    EXPECT_EQ(c.detail.find("cgroup-v1"), std::string::npos) << "no v1 here: " << c.detail;
}

TEST(RunChecks, V2OnlyHostWithoutCpuset) {
    FakeProbe probe;
    probe.files["/sys/fs/cgroup/cgroup.controllers"] = "cpu io memory pids\n";
    probe.files.erase("/sys/fs/cgroup/cgroup.subtree_control");
    const Check c = find(runChecks(probe, kSocket), "cgroups");
    EXPECT_EQ(c.verdict, Verdict::warn);
    EXPECT_EQ(c.detail.rfind("cgroup v2 at /sys/fs/cgroup has no cpuset controller and no v1 "
                             "cpuset is mounted: core-arbiter can only use --backend affinity",
                             0),
              0u)
        << c.detail;
}

TEST(RunChecks, V1CpusetBesideAV2WithoutIt) {
    FakeProbe probe;
    probe.files = {
        {"/proc/self/mountinfo",
         "34 31 0:31 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n"
         "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"},
        {"/sys/fs/cgroup/unified/cgroup.controllers", ""},
    };
    const Check c = find(runChecks(probe, kSocket), "cgroups");
    EXPECT_EQ(c.verdict, Verdict::ok);
    EXPECT_EQ(c.detail,
              "cgroup v1 cpuset at /sys/fs/cgroup/cpuset (cgroup v2 at /sys/fs/cgroup/unified has "
              "no cpuset controller): core-arbiter --backend auto uses cgroup-v1 (isolated cores)");
}

TEST(RunChecks, V2NotEnabledSuggestsTheV1Alternative) {
    FakeProbe probe;
    probe.files["/proc/self/mountinfo"] +=
        "34 31 0:31 / /sys/fs/cgroup/cs rw - cgroup cgroup rw,cpuset\n";
    probe.files["/sys/fs/cgroup/cgroup.subtree_control"] = "";
    const Check c = find(runChecks(probe, kSocket), "cgroups");
    EXPECT_EQ(c.verdict, Verdict::warn);
    EXPECT_NE(c.detail.find("or use --backend cgroup-v1 (v1 cpuset at /sys/fs/cgroup/cs)"),
              std::string::npos)
        << c.detail;
}

TEST(RunChecks, NoCgroupsAtAll) {
    FakeProbe probe;
    probe.files = {{"/proc/self/mountinfo", "23 1 8:1 / / rw - ext4 /dev/sda1 rw\n"}};
    const Check c = find(runChecks(probe, kSocket), "cgroups");
    EXPECT_EQ(c.verdict, Verdict::warn);
    EXPECT_EQ(c.detail.rfind("no cgroup v2 mount and no v1 cpuset hierarchy", 0), 0u) << c.detail;
}

TEST(RunChecks, UnreadableMountinfo) {
    FakeProbe probe;
    probe.files.clear();
    const Check c = find(runChecks(probe, kSocket), "cgroups");
    EXPECT_EQ(c.verdict, Verdict::warn);
    EXPECT_EQ(c.detail.rfind("cannot read /proc/self/mountinfo", 0), 0u) << c.detail;
}

TEST(RunChecks, Moves_FavorDynmodsOffWarnsWithTheFix) {
    FakeProbe probe;
    probe.files["/proc/self/mountinfo"] =
        "23 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
        "30 23 0:26 / /sys/fs/cgroup rw shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
    const Check c = find(runChecks(probe, kSocket), "moves");
    EXPECT_EQ(c.verdict, Verdict::warn);
    EXPECT_EQ(c.detail.rfind("favordynmods is off: after a quiet spell", 0), 0u) << c.detail;
    EXPECT_NE(c.detail.find("fix (as root, Linux >= 6.0): mount -o remount,favordynmods "
                            "/sys/fs/cgroup (stays on until reboot"),
              std::string::npos)
        << c.detail;
}

TEST(RunChecks, Moves_V1CpusetWithoutCgroup2SuggestsMountingOne) {
    FakeProbe probe;
    probe.files = {{"/proc/self/mountinfo",
                    "34 31 0:31 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n"}};
    const Check c = find(runChecks(probe, kSocket), "moves");
    EXPECT_EQ(c.verdict, Verdict::warn);
    EXPECT_NE(c.detail.find("mount -t cgroup2 -o favordynmods cgroup2 <dir>"), std::string::npos)
        << c.detail;
}

TEST(RunChecks, Moves_AnyHierarchyWithFavorDynmodsIsEnough) {
    FakeProbe probe;  // the lock is global: a v2 mount without cpuset still turns it on
    probe.files = {{"/proc/self/mountinfo",
                    "34 31 0:31 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n"
                    "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw,favordynmods\n"}};
    const Check c = find(runChecks(probe, kSocket), "moves");
    EXPECT_EQ(c.verdict, Verdict::ok) << c.detail;
    EXPECT_NE(c.detail.find("(/sys/fs/cgroup/unified)"), std::string::npos) << c.detail;
}

TEST(RunChecks, Moves_NoCpusetNothingToMove) {
    FakeProbe probe;
    probe.files = {
        {"/proc/self/mountinfo", "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"},
        {"/sys/fs/cgroup/cgroup.controllers", "cpu io memory\n"}};
    const Check c = find(runChecks(probe, kSocket), "moves");
    EXPECT_EQ(c.verdict, Verdict::ok);
    EXPECT_EQ(c.detail, "no cpuset hierarchy: the arbiter moves no threads");
}

TEST(RunChecks, Moves_UnreadableMountinfoWarns) {
    FakeProbe probe;
    probe.files.clear();
    const Check c = find(runChecks(probe, kSocket), "moves");
    EXPECT_EQ(c.verdict, Verdict::warn);
    EXPECT_EQ(c.detail, "cannot read /proc/self/mountinfo: favordynmods unknown");
}

TEST(RunChecks, ArbiterDownRunsStandalone) {
    FakeProbe probe;
    probe.arbiterFacts = {ArbiterFacts::State::notRunning, "No such file or directory", 0, 0};
    const auto checks = runChecks(probe, "/tmp/a.sock");
    const Check c = find(checks, "arbiter");
    EXPECT_EQ(c.verdict, Verdict::warn);
    EXPECT_EQ(c.detail.rfind("not running at /tmp/a.sock (No such file or directory): arbrun "
                             "will run standalone",
                             0),
              0u)
        << c.detail;
    EXPECT_EQ(probe.askedSocket, "/tmp/a.sock");
    EXPECT_EQ(doctorExitStatus(checks), 0);
}

TEST(RunChecks, ArbiterRunningAtANegativeNicenessIsFine) {
    FakeProbe probe;
    probe.arbiterFacts.nice = -10;
    const Check c = find(runChecks(probe, "/tmp/a.sock"), "arbiter");
    EXPECT_EQ(c.verdict, Verdict::ok);
    EXPECT_EQ(c.detail,
              "running at /tmp/a.sock: 6 managed cores, 2 processes, niceness -10; arbrun gets "
              "its cores from it");
}

TEST(RunChecks, ArbiterRunningAtNicenessZeroWarnsWithTheFix) {
    FakeProbe probe;
    probe.arbiterFacts.nice = 0;
    const auto checks = runChecks(probe, "/tmp/a.sock");
    const Check c = find(checks, "arbiter");
    EXPECT_EQ(c.verdict, Verdict::warn);
    EXPECT_EQ(c.detail.rfind("running at /tmp/a.sock: 6 managed cores, 2 processes; arbrun gets "
                             "its cores from it, but at niceness 0 its hand-overs wait",
                             0),
              0u)
        << c.detail;
    EXPECT_NE(c.detail.find("fix: start core-arbiter as root or with CAP_SYS_NICE"),
              std::string::npos)
        << c.detail;
    EXPECT_EQ(doctorExitStatus(checks), 0);  // a warning, not a failure
}

TEST(RunChecks, ArbiterNicenessUnknownSaysNothingOfIt) {
    FakeProbe probe;  // another pid namespace, or gone
    const Check c = find(runChecks(probe, "/tmp/a.sock"), "arbiter");
    EXPECT_EQ(c.verdict, Verdict::ok);
    EXPECT_EQ(
        c.detail,
        "running at /tmp/a.sock: 6 managed cores, 2 processes; arbrun gets its cores from it");
}

TEST(RunChecks, ArbiterSocketNotAccessible) {
    FakeProbe probe;
    probe.arbiterFacts = {ArbiterFacts::State::unreachable, "Permission denied", 0, 0};
    const Check c = find(runChecks(probe, kSocket), "arbiter");
    EXPECT_EQ(c.verdict, Verdict::warn);
    EXPECT_NE(c.detail.find("(Permission denied): arbrun will run standalone; fix: the socket is "
                            "mode 0660"),
              std::string::npos)
        << c.detail;
}

TEST(RunChecks, SomethingElseOnTheSocketFails) {
    FakeProbe probe;
    probe.arbiterFacts = {ArbiterFacts::State::badReply, "connection closed", 0, 0};
    const auto checks = runChecks(probe, kSocket);
    const Check c = find(checks, "arbiter");
    EXPECT_EQ(c.verdict, Verdict::fail);
    EXPECT_NE(c.detail.find("does not answer as a core arbiter (connection closed)"),
              std::string::npos);
    EXPECT_EQ(doctorExitStatus(checks), 1);
}

TEST(RunChecks, NotRootWithoutArbiterWarns) {
    FakeProbe probe;
    probe.uid = 1000;
    probe.arbiterFacts = {ArbiterFacts::State::notRunning, "Connection refused", 0, 0};
    const Check c = find(runChecks(probe, kSocket), "root");
    EXPECT_EQ(c.verdict, Verdict::warn);
    EXPECT_EQ(c.detail.rfind("not root (uid 1000): core-arbiter needs root for the cpuset "
                             "backends",
                             0),
              0u)
        << c.detail;
}

TEST(RunChecks, NotRootWithArbiterRunningIsFine) {
    FakeProbe probe;
    probe.uid = 1000;
    const Check c = find(runChecks(probe, kSocket), "root");
    EXPECT_EQ(c.verdict, Verdict::ok);
    EXPECT_NE(c.detail.find("needs no root"), std::string::npos) << c.detail;
}

TEST(RunChecks, PreloadLibraryMissingFails) {
    FakeProbe probe;
    probe.preload = {false, "",
                     "preload library /x/lib/libarbrun.so not found (No such file or "
                     "directory); build it (cmake --build build)"};
    const auto checks = runChecks(probe, kSocket);
    const Check c = find(checks, "preload");
    EXPECT_EQ(c.verdict, Verdict::fail);
    EXPECT_EQ(c.detail, probe.preload.error);
    EXPECT_EQ(doctorExitStatus(checks), 1);
}

TEST(RunChecks, PreloadLoadsButTheRuntimeDoesNotStart) {
    FakeProbe probe;
    probe.trial = {PreloadTrial::Outcome::ranNatively,
                   "arbrun: cannot start the user-thread runtime (x); running natively"};
    const Check c = find(runChecks(probe, kSocket), "preload");
    EXPECT_EQ(c.verdict, Verdict::fail);
    EXPECT_NE(c.detail.find("loads but the runtime did not start (arbrun: cannot start"),
              std::string::npos)
        << c.detail;
}

TEST(RunChecks, PreloadTrialFails) {
    FakeProbe probe;
    probe.trial = {PreloadTrial::Outcome::failed, "ERROR: ld.so: object cannot be preloaded"};
    const Check c = find(runChecks(probe, kSocket), "preload");
    EXPECT_EQ(c.verdict, Verdict::fail);
    EXPECT_NE(c.detail.find("/bin/true under LD_PRELOAD failed (ERROR: ld.so"), std::string::npos)
        << c.detail;
}

}  // namespace
}  // namespace arbrun
