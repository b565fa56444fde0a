// core-arbiter on a real kernel's cpusets, cgroup v1 and cgroup v2 (one parameterised suite): a
// temporary subtree <mount>/arbtest-<pid>-<n>, which the test creates and always removes. Needs
// root and a cpuset hierarchy of that version (hosts binding cpuset to v1 run the v1 half; the VM
// of tests/vm/run-cgroup-vm.sh: v2, then v1); skipped with the reason otherwise. Only processes the
// test starts are moved into the subtree, except in AdoptAll_*, which moves every process of the
// machine and therefore runs only where ARBRUN_VM_TEST=1 says the machine is that VM.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <regex>
#include <set>

#include "arbclient/client.h"
#include "arbmounts/cgroup_mounts.h"
#include "arbpolicy/topology.h"
#include "client_harness.h"
#include "test_support.h"

namespace {

using namespace std::chrono_literals;
using arbclient::CoreArbiterClient;
using arbtest::waitUntil;
using CpuSet = std::set<int>;

enum class Version { kV1, kV2 };

// cgroup files end with a newline.
std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

// The ids in a tasks / cgroup.threads / cgroup.procs file.
std::vector<pid_t> ids(const std::string& file) {
    std::istringstream in(arbtest::readText(file));
    std::vector<pid_t> out;
    pid_t id;
    while (in >> id) out.push_back(id);
    return out;
}

// Whether such a file lists `tid`.
bool contains(const std::string& file, pid_t tid) {
    auto all = ids(file);
    return std::find(all.begin(), all.end(), tid) != all.end();
}

// "0-2,5" <-> {0,1,2,5}, in the kernel's list format.
CpuSet cpuSet(const std::string& list) {
    auto parsed = arbpolicy::parseCpuList(trimmed(list));
    return parsed ? CpuSet(parsed->begin(), parsed->end()) : CpuSet{};
}

std::string cpuList(const CpuSet& cpus) {
    return arbpolicy::formatCpuList(std::vector<int>(cpus.begin(), cpus.end()));
}

// The kernel's view of a thread's placement: sched_getaffinity and /proc/<tid>/cpuset.
CpuSet affinity(pid_t tid) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(tid, sizeof(set), &set) != 0) return {};
    CpuSet out;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set)) out.insert(c);
    return out;
}

std::string cpusetOf(pid_t tid) {
    return trimmed(arbtest::readText("/proc/" + std::to_string(tid) + "/cpuset"));
}

// The threads of a process (empty once it is gone).
std::vector<pid_t> threadsOf(pid_t pid) {
    std::vector<pid_t> tids;
    std::error_code ec;
    for (auto& e :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec))
        tids.push_back(atoi(e.path().filename().c_str()));
    return tids;
}

// Kernel threads (PF_KTHREAD in /proc/<tid>/stat's flags) stay where the kernel puts them.
bool isKernelThread(pid_t tid) {
    std::string stat = arbtest::readText("/proc/" + std::to_string(tid) + "/stat");
    auto close = stat.rfind(')');
    if (close == std::string::npos) return true;  // gone
    std::istringstream in(stat.substr(close + 2));
    std::string field;
    unsigned long flags = 0;
    for (int i = 0; i < 7 && in >> field; i++) {
        if (i == 6) flags = std::stoul(field);
    }
    return (flags & 0x00200000UL) != 0;
}

// Every thread of every process on the machine.
std::vector<pid_t> allThreads() {
    std::vector<pid_t> tids;
    for (auto& e : std::filesystem::directory_iterator("/proc")) {
        pid_t pid = atoi(e.path().filename().c_str());
        if (pid <= 0) continue;
        for (pid_t tid : threadsOf(pid)) tids.push_back(tid);
    }
    return tids;
}

// The mount point of the cpuset hierarchy of `version`, or "" (v2: cgroup2 offering cpuset).
std::string findMount(Version version) {
    const arbmounts::CpusetLayout layout = arbmounts::cpusetLayout(
        arbmounts::parseCgroupMounts(arbtest::readText("/proc/self/mountinfo")),
        [](const std::string& path) -> std::optional<std::string> {
            return arbtest::readText(path);
        });
    return version == Version::kV1 ? layout.v1Cpuset : layout.v2Cpuset;
}

// The grants `arbctl status --json` reports: pid -> cores.
std::map<pid_t, CpuSet> grantsFrom(const std::string& json) {
    std::map<pid_t, CpuSet> out;
    static const std::regex process(R"re(\{"pid":(\d+),[^{}]*?"granted":\[([0-9,]*)\])re");
    for (std::sregex_iterator it(json.begin(), json.end(), process), end; it != end; ++it) {
        CpuSet cores;
        std::istringstream in((*it)[2].str());
        std::string core;
        while (std::getline(in, core, ','))
            if (!core.empty()) cores.insert(std::stoi(core));
        out[std::stoi((*it)[1].str())] = cores;
    }
    return out;
}

// The test-name suffix of a parameter.
const char* versionName(Version v) {
    return v == Version::kV1 ? "v1" : "v2";
}

class CgroupTest : public ::testing::TestWithParam<Version> {
  protected:
    void SetUp() override {
        if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: cgroup tests need root";
        mount_ = findMount(GetParam());
        if (mount_.empty())
            GTEST_SKIP() << "SKIPPED: no cgroup " << versionName(GetParam())
                         << " cpuset hierarchy is mounted";
        cpus_ = machineCpus();
        if (!cpus_.count(0) || !cpus_.count(1))
            GTEST_SKIP() << "SKIPPED: needs cpus 0 and 1 in the cpuset root, have "
                         << cpuList(cpus_);
        std::random_device rd;
        name_ = "arbtest-" + std::to_string(getpid()) + "-" + std::to_string(rd() % 1000000);
        root_ = mount_ + "/" + name_;
        ASSERT_EQ(mkdir(root_.c_str(), 0755), 0) << root_;
        if (v1()) {  // a v1 child starts with no cpus or mems
            arbtest::writeText(root_ + "/cpuset.cpus", readCpuset(mount_, "cpus"));
            arbtest::writeText(root_ + "/cpuset.mems", readCpuset(mount_, "mems"));
            ASSERT_FALSE(trimmed(arbtest::readText(root_ + "/cpuset.cpus")).empty());
        }
        socket_ = dir_ / "arbiter.sock";
    }
    // Removes the subtree even after a failure: anything still inside is one of our children (or,
    // in AdoptAll_*, a process of the VM) and goes back to the hierarchy root.
    void TearDown() override {
        children_.clear();
        arbiter_.reset();
        if (root_.empty() || !std::filesystem::exists(root_)) return;
        for (auto& entry : std::filesystem::directory_iterator(root_)) {
            if (!entry.is_directory()) continue;
            for (pid_t tid : ids(entry.path().string() + "/" + threadsFile()))
                arbtest::writeText(mount_ + (v1() ? "/tasks" : "/cgroup.procs"),
                                   std::to_string(tid));
            rmdir(entry.path().c_str());
        }
        EXPECT_EQ(rmdir(root_.c_str()), 0) << root_;
    }

    bool v1() const { return GetParam() == Version::kV1; }
    const char* threadsFile() const { return v1() ? "tasks" : "cgroup.threads"; }
    std::string set(const std::string& name) const { return root_ + "/" + name; }
    std::string threads(const std::string& setName) const {
        return set(setName) + "/" + threadsFile();
    }
    // What /proc/<tid>/cpuset says for a thread in one of the arbiter's sets.
    std::string relative(const std::string& setName) const { return "/" + name_ + "/" + setName; }

    // cpus or mems of a cpuset (v2: the effective ones; the v2 root has no others).
    static std::string readCpuset(const std::string& dir, const std::string& what) {
        std::string v = trimmed(arbtest::readText(dir + "/cpuset." + what + ".effective"));
        if (v.empty()) v = trimmed(arbtest::readText(dir + "/cpuset.effective_" + what));
        if (v.empty()) v = trimmed(arbtest::readText(dir + "/cpuset." + what));
        return v;
    }
    CpuSet machineCpus() const {
        CpuSet cpus = cpuSet(readCpuset(mount_, "cpus"));
        if (cpus.empty()) cpus = cpuSet(arbtest::readText("/sys/devices/system/cpu/online"));
        return cpus;
    }

    std::vector<std::string> arbiterArgs(const std::string& cpus, bool adoptAll) const {
        std::vector<std::string> args = {"--backend",
                                         v1() ? "cgroup-v1" : "cgroup-v2",
                                         "--cgroup-root",
                                         root_,
                                         "--cpus",
                                         cpus,
                                         "--reserve",
                                         "1",
                                         "--log-level",
                                         "warn",
                                         "--readopt-timeout",
                                         "3000"};
        if (adoptAll) args.push_back("--adopt-all-processes");
        return args;
    }
    void startArbiter(const std::string& cpus = "0-1", bool adoptAll = false) {
        // Generous: adopting every task of a machine is slow under emulation (the VM test's TCG).
        arbiter_ = std::make_unique<arbtest::ArbiterProcess>(socket_, arbiterArgs(cpus, adoptAll),
                                                             60000ms);
        ASSERT_TRUE(arbiter_->ready());
    }
    // A forked client: one carrier at `level`, reports its tid once it holds a core, then waits.
    pid_t startClient(int level, bool ignoreRelease, arbtest::ReportPipe& report) {
        children_.emplace_back([&, level, ignoreRelease] {
            std::string error;
            auto client = CoreArbiterClient::connect(socket_, &error);
            if (!client) return 1;
            arbtest::CarrierThread carrier(*client, ignoreRelease);
            std::array<uint32_t, 8> request{};
            request[level] = 1;
            client->setRequestedCores(request, 0, 1, &error);
            while (carrier.core() < 0) std::this_thread::sleep_for(100us);
            report.put(carrier.tid());
            pause();
            return 0;
        });
        pid_t tid = 0;
        report.get(&tid);
        return tid;
    }
    // `arbrun --cores 1:MAX` running 2 * MAX computing threads at `priority`: the load factor
    // stays above Arachne's 1.5 on any grant below MAX, so its estimate climbs to MAX. The child
    // dies with the test.
    pid_t startArbrun(int priority, int maxCores) {
        children_.emplace_back([&, priority, maxCores] {
            std::vector<std::string> args = {ARBRUN_BIN,
                                             "--arbiter",
                                             socket_,
                                             "--priority",
                                             std::to_string(priority),
                                             "--cores",
                                             "1:" + std::to_string(maxCores),
                                             "--",
                                             SPIN_BIN,
                                             std::to_string(2 * maxCores)};
            std::vector<char*> argv;
            for (auto& a : args) argv.push_back(a.data());
            argv.push_back(nullptr);
            execv(argv[0], argv.data());
            return 127;
        });
        return children_.back().pid();
    }
    std::map<pid_t, CpuSet> grants(std::string* json = nullptr) const {
        std::string out;
        arbtest::runCommand(std::string(ARBCTL_BIN) + " --socket " + socket_ + " status --json",
                            &out);
        if (json) *json = out;
        return grantsFrom(out);
    }
    // Waits until the arbiter reports exactly these grant sizes (pid -> number of cores).
    std::map<pid_t, CpuSet> waitForGrants(const std::map<pid_t, size_t>& sizes) {
        std::map<pid_t, CpuSet> now;
        std::string json;
        bool ok = waitUntil(
            [&] {
                now = grants(&json);
                for (auto [pid, n] : sizes)
                    if (!now.count(pid) || now[pid].size() != n) return false;
                return true;
            },
            60000ms);  // bounds a failure only; slow under emulation (the VM test's TCG)
        std::string expected;
        for (auto [pid, n] : sizes) expected += std::to_string(pid) + ":" + std::to_string(n) + " ";
        EXPECT_TRUE(ok) << "grants never reached " << expected << "; arbctl: " << json;
        return now;
    }
    // The carrier of core k is the one thread in core-k's set; it belongs to `pid`, the kernel
    // places it in that set and lets it run on k alone. The process's other threads are in the
    // unmanaged set, on the arbiter's cpus minus every granted core. Returns core -> carrier.
    std::map<int, pid_t> expectPlacement(pid_t pid, const CpuSet& granted, const CpuSet& allGranted,
                                         const CpuSet& arbiterCpus) {
        std::map<int, pid_t> carriers;
        CpuSet unmanagedCpus;
        for (int c : arbiterCpus)
            if (!allGranted.count(c)) unmanagedCpus.insert(c);
        // The unmanaged set shrinks just after the grant is sent (flush): bounded wait.
        EXPECT_TRUE(waitUntil([&] {
            return cpuSet(arbtest::readText(set("unmanaged") + "/cpuset.cpus")) == unmanagedCpus;
        })) << arbtest::readText(set("unmanaged") + "/cpuset.cpus");
        for (int k : granted) {
            auto members = ids(threads("core-" + std::to_string(k)));
            EXPECT_EQ(members.size(), 1u) << "core " << k;
            if (members.size() != 1) continue;
            pid_t tid = members[0];
            carriers[k] = tid;
            EXPECT_TRUE(std::filesystem::exists("/proc/" + std::to_string(pid) + "/task/" +
                                                std::to_string(tid)))
                << "carrier " << tid << " of core " << k << " is not a thread of " << pid;
            EXPECT_EQ(cpusetOf(tid), relative("core-" + std::to_string(k)));
            EXPECT_EQ(affinity(tid), CpuSet{k}) << "carrier " << tid;
        }
        for (pid_t tid : threadsOf(pid)) {
            bool carrier = false;
            for (auto [k, t] : carriers) carrier |= t == tid;
            if (carrier) continue;
            // A carrier without a core sits in the unmanaged set; so does every other thread.
            EXPECT_EQ(cpusetOf(tid), relative("unmanaged")) << "thread " << tid << " of " << pid;
            EXPECT_EQ(affinity(tid), unmanagedCpus) << "thread " << tid << " of " << pid;
        }
        return carriers;
    }
    // With --adopt-all-processes no user-space thread but a core's carrier may run on a granted
    // core; on v2 the arbiter's cpus are a partition, so nothing outside it runs on any of them.
    void expectNothingElseOnGrantedCores(const std::map<int, pid_t>& carriers,
                                         const CpuSet& arbiterCpus) {
        if (!v1()) {
            EXPECT_EQ(trimmed(arbtest::readText(root_ + "/cpuset.cpus.partition")), "root");
            EXPECT_EQ(cpuSet(arbtest::readText(root_ + "/cpuset.cpus.effective")), arbiterCpus);
        }
        int checked = 0;
        for (pid_t tid : allThreads()) {
            if (isKernelThread(tid)) continue;
            CpuSet cpus = affinity(tid);
            if (cpus.empty()) continue;  // exited meanwhile
            checked++;
            for (auto [k, carrier] : carriers) {
                if (tid != carrier) {
                    EXPECT_FALSE(cpus.count(k)) << "thread " << tid << " on " << k;
                }
            }
            if (!v1() && cpusetOf(tid).rfind("/" + name_ + "/", 0) != 0) {
                for (int c : arbiterCpus) {
                    EXPECT_FALSE(cpus.count(c))
                        << "thread " << tid << " outside the partition runs on " << c;
                }
            }
        }
        EXPECT_GT(checked, 3);
    }
    // Two arbrun clients at priorities 0 and 5; the cores of the first go to the second when it is
    // killed; a restarted arbiter re-adopts the survivor's carriers; a clean stop leaves nothing.
    void twoArbrunClients(bool adoptAll);

    arbtest::TempDir dir_;
    std::string mount_, name_, root_, socket_;
    CpuSet cpus_;
    std::unique_ptr<arbtest::ArbiterProcess> arbiter_;
    std::vector<arbtest::Child> children_;
};

INSTANTIATE_TEST_SUITE_P(Cgroup, CgroupTest, ::testing::Values(Version::kV1, Version::kV2),
                         [](const auto& info) { return std::string(versionName(info.param)); });

TEST_P(CgroupTest, Grant_MovesCarrierIntoItsCoreSetAndPinsIt) {
    startArbiter();
    EXPECT_EQ(trimmed(arbtest::readText(set("core-1") + "/cpuset.cpus")), "1");
    EXPECT_EQ(trimmed(arbtest::readText(set("core-1") + "/cpuset.mems")),
              readCpuset(root_, "mems"));
    arbtest::ReportPipe report;
    pid_t tid = startClient(0, false, report);
    ASSERT_GT(tid, 0);
    EXPECT_TRUE(contains(threads("core-1"), tid));
    EXPECT_EQ(affinity(tid), CpuSet{1});
    EXPECT_EQ(cpusetOf(tid), relative("core-1"));
    // The client's other threads are in the unmanaged set, which no longer has core 1. The
    // arbiter shrinks that set after sending the grant (flush), so the carrier may see its grant
    // first: wait for it (bounded).
    EXPECT_TRUE(contains(threads("unmanaged"), children_.back().pid()));
    EXPECT_TRUE(waitUntil(
        [&] { return trimmed(arbtest::readText(set("unmanaged") + "/cpuset.cpus")) == "0"; }));
    children_.back().kill9();
    EXPECT_TRUE(waitUntil(
        [&] { return trimmed(arbtest::readText(set("unmanaged") + "/cpuset.cpus")) == "0-1"; }));
    EXPECT_EQ(arbiter_->stop(), 0);
    EXPECT_FALSE(std::filesystem::exists(set("core-1")));
    EXPECT_FALSE(std::filesystem::exists(set("unmanaged")));
}

TEST_P(CgroupTest, Reclaim_IgnoredReleaseIsForcedIntoTheUnmanagedSet) {
    startArbiter();
    arbtest::ReportPipe lowReport, highReport;
    pid_t low = startClient(7, true, lowReport);
    ASSERT_GT(low, 0);
    ASSERT_EQ(affinity(low), CpuSet{1});
    pid_t high = startClient(0, false, highReport);
    ASSERT_GT(high, 0);
    EXPECT_TRUE(contains(threads("core-1"), high));
    EXPECT_FALSE(contains(threads("core-1"), low));
    EXPECT_TRUE(contains(threads("unmanaged"), low));
    // Forced out in one event and core 1 granted in a later one, the unmanaged set may have been
    // flushed with core 1 in between, and is shrunk again after the grant went out (as in
    // Grant_MovesCarrierIntoItsCoreSetAndPinsIt): wait for that (bounded), then low is off core 1.
    EXPECT_TRUE(waitUntil(
        [&] { return trimmed(arbtest::readText(set("unmanaged") + "/cpuset.cpus")) == "0"; }));
    EXPECT_EQ(affinity(low), CpuSet{0});
}

TEST_P(CgroupTest, Restart_SetsOfAKilledArbiterAreReadopted) {
    startArbiter();
    arbtest::ReportPipe report;
    pid_t tid = startClient(3, false, report);
    ASSERT_GT(tid, 0);
    arbiter_->kill9();
    EXPECT_TRUE(contains(threads("core-1"), tid));  // left behind, still running there
    startArbiter();
    std::string out;
    EXPECT_TRUE(waitUntil([&] {
        arbtest::runCommand(std::string(ARBCTL_BIN) + " --socket " + socket_ + " status --json",
                            &out);
        return out.find("\"granted\":[1]") != std::string::npos;
    })) << out;
    EXPECT_TRUE(contains(threads("core-1"), tid));
    EXPECT_EQ(affinity(tid), CpuSet{1});
}

TEST_P(CgroupTest, Churn_ClientsComeAndGoLeavingNoMembersBehind) {
    startArbiter();
    // The baseline is taken after a first client has come and gone: the arbiter keeps the control
    // files of the hand-over path open from then on (Sys::writeControlFile), a fixed few. It may
    // still count the readiness probe's connection: leaks only ever add.
    {
        arbtest::ReportPipe report;
        pid_t tid = startClient(0, false, report);
        ASSERT_GT(tid, 0);
        children_.back().kill9();
        children_.pop_back();
        ASSERT_TRUE(waitUntil([&] { return ids(threads("core-1")).empty(); }));
    }
    int fdsBefore = arbtest::openFds(arbiter_->pid());
    for (int i = 0; i < 50; i++) {
        arbtest::ReportPipe report;
        pid_t tid = startClient(i % 8, false, report);
        ASSERT_GT(tid, 0) << "client " << i;
        ASSERT_TRUE(contains(threads("core-1"), tid));
        children_.back().kill9();
        children_.pop_back();
    }
    EXPECT_TRUE(waitUntil([&] {
        return ids(threads("core-1")).empty() && ids(threads("unmanaged")).empty() &&
               trimmed(arbtest::readText(set("unmanaged") + "/cpuset.cpus")) == "0-1";
    }));
    EXPECT_TRUE(waitUntil([&] { return arbtest::openFds(arbiter_->pid()) <= fdsBefore; }));
    EXPECT_EQ(arbiter_->stop(), 0);
    for (auto& entry : std::filesystem::directory_iterator(root_))
        EXPECT_FALSE(entry.is_directory()) << "left over: " << entry.path();
}

void CgroupTest::twoArbrunClients(bool adoptAll) {
#ifdef ARBRUN_SANITIZE
    GTEST_SKIP() << "SKIPPED: the sanitizer build's preload library cannot run in a program";
#endif
    // v2 with --adopt-all-processes makes the arbiter's cpus a partition: the rest of the machine
    // keeps the lowest cpu. One more cpu stays unmanaged (--reserve 1); at least two are managed.
    CpuSet arbiterCpus = cpus_;
    if (adoptAll && !v1()) arbiterCpus.erase(arbiterCpus.begin());
    if (arbiterCpus.size() < 3)
        GTEST_SKIP() << "SKIPPED: needs " << (cpus_.size() - arbiterCpus.size() + 3)
                     << " cpus, have " << cpuList(cpus_);
    const size_t managed = arbiterCpus.size() - 1;
    startArbiter(cpuList(arbiterCpus), adoptAll);
    if (HasFatalFailure()) return;

    pid_t high = startArbrun(0, static_cast<int>(managed - 1));
    waitForGrants({{high, managed - 1}});
    pid_t low = startArbrun(5, static_cast<int>(managed));
    auto now = waitForGrants({{high, managed - 1}, {low, 1}});
    CpuSet allGranted = now[high];
    allGranted.insert(now[low].begin(), now[low].end());
    auto highCarriers = expectPlacement(high, now[high], allGranted, arbiterCpus);
    auto carriers = expectPlacement(low, now[low], allGranted, arbiterCpus);
    carriers.insert(highCarriers.begin(), highCarriers.end());
    if (adoptAll) expectNothingElseOnGrantedCores(carriers, arbiterCpus);

    // kill -9 of the high-priority client: its cores go to the other one.
    children_.front().kill9();
    now = waitForGrants({{low, managed}});
    EXPECT_FALSE(now.count(high));
    carriers = expectPlacement(low, now[low], now[low], arbiterCpus);
    if (adoptAll) expectNothingElseOnGrantedCores(carriers, arbiterCpus);

    // A restarted arbiter re-adopts the carriers where the killed one left them.
    arbiter_->kill9();
    startArbiter(cpuList(arbiterCpus), adoptAll);
    if (HasFatalFailure()) return;
    now = waitForGrants({{low, managed}});
    auto readopted = expectPlacement(low, now[low], now[low], arbiterCpus);
    EXPECT_EQ(readopted, carriers) << "the carriers were not re-adopted on their cores";
    if (adoptAll) expectNothingElseOnGrantedCores(readopted, arbiterCpus);

    // A clean stop returns every thread to the hierarchy root and leaves no set behind.
    EXPECT_EQ(arbiter_->stop(), 0);
    for (auto& entry : std::filesystem::directory_iterator(root_))
        EXPECT_FALSE(entry.is_directory()) << "left over: " << entry.path();
    for (pid_t tid : threadsOf(low)) EXPECT_EQ(cpusetOf(tid), "/") << "thread " << tid;
    if (!v1()) {
        EXPECT_EQ(trimmed(arbtest::readText(root_ + "/cpuset.cpus.partition")), "member");
        EXPECT_EQ(cpuSet(readCpuset(mount_, "cpus")), cpus_) << "the partition kept cpus";
    }
}

TEST_P(CgroupTest, TwoArbrunClients_CarriersSitOnTheirGrantsUntilKilledOrRestarted) {
    twoArbrunClients(false);
}

TEST_P(CgroupTest, AdoptAll_ManagedCoresRunOnlyTheirCarriers) {
    const char* vm = getenv("ARBRUN_VM_TEST");
    if (!vm || std::string(vm) != "1")
        GTEST_SKIP() << "SKIPPED: moves every process of the machine into the arbiter's sets; runs "
                        "only in the throwaway VM (arbiter/tests/vm/run-cgroup-vm.sh sets "
                        "ARBRUN_VM_TEST=1)";
    twoArbrunClients(true);
}

TEST(CgroupGrants, ParsesArbctlJson) {
    auto g = grantsFrom(
        R"({"managed":[1,2],"processes":[{"pid":12,"command":"a","priority":0,"requested":[1],)"
        R"("granted":[1,2],"pendingReleases":[]},{"pid":13,"command":"b","granted":[]}]})");
    EXPECT_EQ(g.size(), 2u);
    EXPECT_EQ(g[12], (CpuSet{1, 2}));
    EXPECT_TRUE(g[13].empty());
}

}  // namespace
