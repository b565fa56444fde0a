// core-arbiter on a real cgroup v1 cpuset subtree, /sys/fs/cgroup/cpuset/<unique temp name>, which
// the test creates and always removes. Needs root and a v1 cpuset hierarchy (CI has both); skipped
// with a reason otherwise. Only forked children of the test are ever moved into the subtree.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <random>

#include "arbclient/client.h"
#include "arbpolicy/topology.h"
#include "client_harness.h"
#include "test_support.h"

namespace {

using namespace std::chrono_literals;
using arbclient::CoreArbiterClient;
using arbtest::waitUntil;

const char* kCpusetMount = "/sys/fs/cgroup/cpuset";

std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

std::string cpusAllowed(pid_t tid) {
    std::ifstream in("/proc/" + std::to_string(tid) + "/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("Cpus_allowed_list:", 0) == 0) {
            std::string v = trimmed(line.substr(18));
            return v.substr(v.find_first_not_of(" \t"));
        }
    return "";
}

bool contains(const std::string& tasksFile, pid_t tid) {
    std::istringstream in(arbtest::readText(tasksFile));
    pid_t t;
    while (in >> t)
        if (t == tid) return true;
    return false;
}

class CgroupV1Test : public ::testing::Test {
  protected:
    void SetUp() override {
        if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: cgroup v1 tests need root";
        if (!std::filesystem::exists(std::string(kCpusetMount) + "/cpuset.cpus"))
            GTEST_SKIP() << "SKIPPED: no cgroup v1 cpuset hierarchy at " << kCpusetMount;
        std::string cpus =
            trimmed(arbtest::readText(std::string(kCpusetMount) + "/cpuset.effective_cpus"));
        if (cpus.empty())
            cpus = trimmed(arbtest::readText(std::string(kCpusetMount) + "/cpuset.cpus"));
        auto list = arbpolicy::parseCpuList(cpus);
        if (!list || std::count(list->begin(), list->end(), 0) == 0 ||
            std::count(list->begin(), list->end(), 1) == 0)
            GTEST_SKIP() << "SKIPPED: needs cpus 0 and 1 in the cpuset root, have " << cpus;
        std::random_device rd;
        root_ = std::string(kCpusetMount) + "/arbtest-" + std::to_string(getpid()) + "-" +
                std::to_string(rd() % 1000000);
        ASSERT_EQ(mkdir(root_.c_str(), 0755), 0) << root_;
        arbtest::writeText(root_ + "/cpuset.cpus", cpus);
        arbtest::writeText(root_ + "/cpuset.mems",
                           trimmed(arbtest::readText(std::string(kCpusetMount) + "/cpuset.mems")));
        ASSERT_EQ(trimmed(arbtest::readText(root_ + "/cpuset.cpus")).empty(), false);
        socket_ = dir_ / "arbiter.sock";
    }
    // Removes the subtree even after a failure: anything still inside is one of our children's
    // threads and goes back to the hierarchy root.
    void TearDown() override {
        children_.clear();
        arbiter_.reset();
        if (root_.empty() || !std::filesystem::exists(root_)) return;
        for (auto& entry : std::filesystem::directory_iterator(root_)) {
            if (!entry.is_directory()) continue;
            std::istringstream in(arbtest::readText(entry.path().string() + "/tasks"));
            pid_t tid;
            while (in >> tid)
                arbtest::writeText(std::string(kCpusetMount) + "/tasks", std::to_string(tid));
            rmdir(entry.path().c_str());
        }
        EXPECT_EQ(rmdir(root_.c_str()), 0) << root_;
    }
    void startArbiter() {
        arbiter_ = std::make_unique<arbtest::ArbiterProcess>(
            socket_, std::vector<std::string>{"--backend", "cgroup-v1", "--cgroup-root", root_,
                                              "--cpus", "0-1", "--reserve", "1", "--log-level",
                                              "warn", "--readopt-timeout", "3000"});
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

    arbtest::TempDir dir_;
    std::string root_, socket_;
    std::unique_ptr<arbtest::ArbiterProcess> arbiter_;
    std::vector<arbtest::Child> children_;
};

TEST_F(CgroupV1Test, Grant_MovesCarrierIntoItsCoreSetAndPinsIt) {
    startArbiter();
    EXPECT_EQ(trimmed(arbtest::readText(root_ + "/core-1/cpuset.cpus")), "1");
    EXPECT_EQ(trimmed(arbtest::readText(root_ + "/core-1/cpuset.mems")),
              trimmed(arbtest::readText(root_ + "/cpuset.mems")));
    arbtest::ReportPipe report;
    pid_t tid = startClient(0, false, report);
    ASSERT_GT(tid, 0);
    EXPECT_TRUE(contains(root_ + "/core-1/tasks", tid));
    EXPECT_EQ(cpusAllowed(tid), "1");
    // The client's other threads are in the unmanaged set, which no longer has core 1. The
    // arbiter shrinks that set after sending the grant (flush), so the carrier may see its grant
    // first: wait for it (bounded).
    EXPECT_TRUE(contains(root_ + "/unmanaged/tasks", children_.back().pid()));
    EXPECT_TRUE(waitUntil(
        [&] { return trimmed(arbtest::readText(root_ + "/unmanaged/cpuset.cpus")) == "0"; }));
    children_.back().kill9();
    EXPECT_TRUE(waitUntil(
        [&] { return trimmed(arbtest::readText(root_ + "/unmanaged/cpuset.cpus")) == "0-1"; }));
    EXPECT_EQ(arbiter_->stop(), 0);
    EXPECT_FALSE(std::filesystem::exists(root_ + "/core-1"));
    EXPECT_FALSE(std::filesystem::exists(root_ + "/unmanaged"));
}

TEST_F(CgroupV1Test, Reclaim_IgnoredReleaseIsForcedIntoTheUnmanagedSet) {
    startArbiter();
    arbtest::ReportPipe lowReport, highReport;
    pid_t low = startClient(7, true, lowReport);
    ASSERT_GT(low, 0);
    ASSERT_EQ(cpusAllowed(low), "1");
    pid_t high = startClient(0, false, highReport);
    ASSERT_GT(high, 0);
    EXPECT_TRUE(contains(root_ + "/core-1/tasks", high));
    EXPECT_FALSE(contains(root_ + "/core-1/tasks", low));
    EXPECT_TRUE(contains(root_ + "/unmanaged/tasks", low));
    EXPECT_EQ(cpusAllowed(low), "0");
}

TEST_F(CgroupV1Test, Restart_SetsOfAKilledArbiterAreReadopted) {
    startArbiter();
    arbtest::ReportPipe report;
    pid_t tid = startClient(3, false, report);
    ASSERT_GT(tid, 0);
    arbiter_->kill9();
    EXPECT_TRUE(contains(root_ + "/core-1/tasks", tid));  // left behind, still running there
    startArbiter();
    std::string out;
    EXPECT_TRUE(waitUntil([&] {
        arbtest::runCommand(std::string(ARBCTL_BIN) + " --socket " + socket_ + " status --json",
                            &out);
        return out.find("\"granted\":[1]") != std::string::npos;
    })) << out;
    EXPECT_TRUE(contains(root_ + "/core-1/tasks", tid));
    EXPECT_EQ(cpusAllowed(tid), "1");
}

}  // namespace

namespace {

TEST_F(CgroupV1Test, Churn_ClientsComeAndGoLeavingNoMembersBehind) {
    startArbiter();
    // The baseline may still count the readiness probe's connection: leaks only ever add.
    int fdsBefore = arbtest::openFds(arbiter_->pid());
    for (int i = 0; i < 50; i++) {
        arbtest::ReportPipe report;
        pid_t tid = startClient(i % 8, false, report);
        ASSERT_GT(tid, 0) << "client " << i;
        ASSERT_TRUE(contains(root_ + "/core-1/tasks", tid));
        children_.back().kill9();
        children_.pop_back();
    }
    EXPECT_TRUE(waitUntil([&] {
        return trimmed(arbtest::readText(root_ + "/core-1/tasks")).empty() &&
               trimmed(arbtest::readText(root_ + "/unmanaged/tasks")).empty() &&
               trimmed(arbtest::readText(root_ + "/unmanaged/cpuset.cpus")) == "0-1";
    }));
    EXPECT_TRUE(waitUntil([&] { return arbtest::openFds(arbiter_->pid()) <= fdsBefore; }));
    EXPECT_EQ(arbiter_->stop(), 0);
    for (auto& entry : std::filesystem::directory_iterator(root_))
        EXPECT_FALSE(entry.is_directory()) << "left over: " << entry.path();
}

}  // namespace
