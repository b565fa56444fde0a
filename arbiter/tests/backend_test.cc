// Backends against directory trees: the cpuset backends (v1 and v2 file layouts) on plain temporary
// directories and on the fake cgroup tree, the affinity backend through a recording Sys, error
// injection in the syscall layer, and --backend auto detection.
#include <errno.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "backend.h"
#include "fake_cgroup_sys.h"
#include "faulty_sys.h"
#include "log.h"
#include "test_support.h"

namespace arbd {
namespace {

using arbtest::readText;
using arbtest::TempDir;
using arbtest::writeText;

pid_t myTid() {
    return static_cast<pid_t>(syscall(SYS_gettid));
}

std::string trimmed(const std::string& path) {
    std::string s = readText(path);
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
}

class BackendTest : public ::testing::Test {
  protected:
    void SetUp() override {
        setLogLevel(LogLevel::kError);
        ASSERT_FALSE(dir_.path().empty());
        root_ = dir_ / "root";
        std::filesystem::create_directory(root_);
        config_.root = root_;
        config_.all = {0, 1, 2, 3};
        config_.managed = {1, 2, 3};
        config_.returnDir = root_;
    }
    void makeV1Root(const std::string& cpus = "0-3", const std::string& mems = "0-1") {
        writeText(root_ + "/cpuset.cpus", cpus + "\n");
        writeText(root_ + "/cpuset.mems", mems + "\n");
    }
    void makeV2Root(const std::string& controllers = "cpuset cpu io") {
        writeText(root_ + "/cgroup.controllers", controllers + "\n");
        writeText(root_ + "/cpuset.cpus.effective", "0-3\n");
        writeText(root_ + "/cpuset.mems.effective", "0\n");
    }

    TempDir dir_;
    std::string root_;
    BackendConfig config_;
    std::unique_ptr<Sys> real_ = makeRealSys();
};

// Under the kernel's /proc the check asks tgkill(pid, tid, 0): a thread of ours is ours, a thread
// of another process (a child) or one that has exited is not, whatever its tid.
TEST_F(BackendTest, ProcInfoThreadBelongsTo_KernelProcChecksTheThreadGroup) {
    ProcInfo proc(*real_, "/proc");
    EXPECT_TRUE(proc.threadBelongsTo(getpid(), myTid()));
    pid_t other = 0;
    std::thread t([&other] { other = myTid(); });
    t.join();
    EXPECT_FALSE(proc.threadBelongsTo(getpid(), other));  // exited and joined
    std::atomic<pid_t> live{0};
    std::atomic<bool> done{false};
    std::thread u([&] {
        live.store(myTid());
        while (!done.load()) std::this_thread::yield();
    });
    while (live.load() == 0) std::this_thread::yield();
    EXPECT_TRUE(proc.threadBelongsTo(getpid(), live.load()));
    done.store(true);
    u.join();
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        char c;
        (void)!read(fds[0], &c, 1);  // lives until the parent has asked
        _exit(0);
    }
    EXPECT_FALSE(proc.threadBelongsTo(getpid(), child));  // alive, but in another thread group
    EXPECT_TRUE(proc.threadBelongsTo(child, child));
    EXPECT_FALSE(proc.threadBelongsTo(child, myTid()));
    (void)!write(fds[1], "x", 1);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    close(fds[0]);
    close(fds[1]);
    EXPECT_FALSE(proc.threadBelongsTo(child, child));  // reaped
    EXPECT_FALSE(proc.threadBelongsTo(getpid(), 0));
    EXPECT_FALSE(proc.threadBelongsTo(0, myTid()));
    arbtest::FaultySys faulty(*real_);
    faulty.fail("tgkill", std::to_string(myTid()), ESRCH);
    EXPECT_FALSE(ProcInfo(faulty, "/proc").threadBelongsTo(getpid(), myTid()));
}

// Under another --proc-root (tests, a containerised arbiter) the tree decides, not the kernel.
TEST_F(BackendTest, ProcInfoThreadBelongsTo_OtherProcRootReadsTheTree) {
    const std::string procRoot = dir_ / "proc";
    std::filesystem::create_directories(procRoot + "/4242/task/4243");
    ProcInfo proc(*real_, procRoot);
    EXPECT_TRUE(proc.threadBelongsTo(4242, 4243));
    EXPECT_FALSE(proc.threadBelongsTo(4242, 4244));
    EXPECT_FALSE(proc.threadBelongsTo(getpid(), myTid()));  // real, but not in this tree
}

TEST_F(BackendTest, CpusetV1Start_BuildsLayoutWithParentMems) {
    makeV1Root();
    auto backend = makeCpusetBackend(*real_, config_, false);
    std::vector<Leftover> leftovers;
    std::string error;
    ASSERT_TRUE(backend->start(&leftovers, &error)) << error;
    EXPECT_TRUE(leftovers.empty());
    EXPECT_EQ(trimmed(root_ + "/unmanaged/cpuset.cpus"), "0-3");
    EXPECT_EQ(trimmed(root_ + "/unmanaged/cpuset.mems"), "0-1");
    for (int core : {1, 2, 3}) {
        std::string dir = root_ + "/core-" + std::to_string(core);
        EXPECT_EQ(trimmed(dir + "/cpuset.cpus"), std::to_string(core));
        EXPECT_EQ(trimmed(dir + "/cpuset.mems"), "0-1");
    }
    EXPECT_FALSE(std::filesystem::exists(root_ + "/core-0"));
}

TEST_F(BackendTest, CpusetV1Moves_WriteTasksAndUnmanagedCpus) {
    makeV1Root();
    auto backend = makeCpusetBackend(*real_, config_, false);
    std::vector<Leftover> leftovers;
    std::string error;
    ASSERT_TRUE(backend->start(&leftovers, &error)) << error;
    ASSERT_TRUE(backend->moveToCore(4321, 2, &error)) << error;
    EXPECT_EQ(trimmed(root_ + "/core-2/tasks"), "4321");
    ASSERT_TRUE(backend->setGrantedCores({2, 3}, &error));
    EXPECT_EQ(trimmed(root_ + "/unmanaged/cpuset.cpus"), "0-1");
    ASSERT_TRUE(backend->moveToUnmanaged(4321, &error));
    EXPECT_EQ(trimmed(root_ + "/unmanaged/tasks"), "4321");
    ASSERT_TRUE(backend->adoptProcess(777, {}, &error));
    EXPECT_EQ(trimmed(root_ + "/unmanaged/cgroup.procs"), "777");
}

TEST_F(BackendTest, CpusetV1Start_RejectsCpusOutsideTheRoot) {
    makeV1Root("0-2");
    auto backend = makeCpusetBackend(*real_, config_, false);
    std::vector<Leftover> leftovers;
    std::string error;
    EXPECT_FALSE(backend->start(&leftovers, &error));
    EXPECT_NE(error.find("cpu 3 is not in"), std::string::npos) << error;
}

TEST_F(BackendTest, CpusetV1Start_EmptyMemsIsAnError) {
    makeV1Root("0-3", "");
    auto backend = makeCpusetBackend(*real_, config_, false);
    std::vector<Leftover> leftovers;
    std::string error;
    EXPECT_FALSE(backend->start(&leftovers, &error));
    EXPECT_NE(error.find("no memory nodes"), std::string::npos) << error;
}

TEST_F(BackendTest, CpusetV1Start_CreatesMissingRootFromParent) {
    // The parent plays the hierarchy root; R does not exist yet.
    writeText(dir_ / "cpuset.cpus", "0-3\n");
    writeText(dir_ / "cpuset.mems", "0\n");
    config_.root = dir_ / "fresh";
    auto backend = makeCpusetBackend(*real_, config_, false);
    std::vector<Leftover> leftovers;
    std::string error;
    ASSERT_TRUE(backend->start(&leftovers, &error)) << error;
    EXPECT_EQ(trimmed(dir_ / "fresh/cpuset.mems"), "0");
    EXPECT_TRUE(std::filesystem::exists(dir_ / "fresh/core-3"));
}

TEST_F(BackendTest, CpusetStop_RemovesTheRootOnlyWhenItMadeIt) {
    writeText(dir_ / "cpuset.cpus", "0-3\n");  // the parent plays the hierarchy root
    writeText(dir_ / "cpuset.mems", "0\n");
    FakeCgroupSys fake(*real_, dir_.path(), "/proc");  // rmdir as in cgroupfs
    std::vector<Leftover> leftovers;
    std::string error;
    config_.root = dir_ / "fresh";
    auto made = makeCpusetBackend(fake, config_, false);
    ASSERT_TRUE(made->start(&leftovers, &error)) << error;
    ASSERT_TRUE(std::filesystem::exists(dir_ / "fresh/core-3"));
    made->stop();
    EXPECT_FALSE(std::filesystem::exists(dir_ / "fresh"));
    // A root that was there before the arbiter stays after it.
    std::filesystem::create_directory(dir_ / "kept");
    writeText(dir_ / "kept/cpuset.cpus", "0-3\n");
    writeText(dir_ / "kept/cpuset.mems", "0\n");
    config_.root = dir_ / "kept";
    auto found = makeCpusetBackend(fake, config_, false);
    ASSERT_TRUE(found->start(&leftovers, &error)) << error;
    found->stop();
    EXPECT_TRUE(std::filesystem::exists(dir_ / "kept"));
    EXPECT_FALSE(std::filesystem::exists(dir_ / "kept/core-3"));
}

TEST_F(BackendTest, CpusetV2Start_EnablesControllerAndThreadedSets) {
    makeV2Root();
    auto backend = makeCpusetBackend(*real_, config_, true);
    std::vector<Leftover> leftovers;
    std::string error;
    ASSERT_TRUE(backend->start(&leftovers, &error)) << error;
    EXPECT_EQ(trimmed(root_ + "/cgroup.subtree_control"), "+cpuset");
    EXPECT_EQ(trimmed(root_ + "/unmanaged/cgroup.type"), "threaded");
    EXPECT_EQ(trimmed(root_ + "/core-1/cgroup.type"), "threaded");
    EXPECT_EQ(trimmed(root_ + "/core-1/cpuset.mems"), "0");
    ASSERT_TRUE(backend->moveToCore(99, 1, &error));
    EXPECT_EQ(trimmed(root_ + "/core-1/cgroup.threads"), "99");
    ASSERT_TRUE(backend->adoptProcess(98, {}, &error));
    EXPECT_EQ(trimmed(root_ + "/unmanaged/cgroup.procs"), "98");
}

TEST_F(BackendTest, CpusetV2Start_WithoutCpusetControllerFails) {
    makeV2Root("cpu io");
    auto backend = makeCpusetBackend(*real_, config_, true);
    std::vector<Leftover> leftovers;
    std::string error;
    EXPECT_FALSE(backend->start(&leftovers, &error));
    EXPECT_NE(error.find("cpuset controller not available"), std::string::npos) << error;
}

// Behaviours of a cgroup2 kernel the v2 tests need on a directory tree: enabling cpuset in a
// parent's subtree_control makes it appear in the child's cgroup.controllers, a partition the
// kernel cannot grant reads back as "root invalid (<reason>)", and a populated cpuset cannot be
// emptied.
class KernelLikeSys final : public Sys {
  public:
    KernelLikeSys(Sys& base, std::string child) : base_(base), child_(std::move(child)) {}
    std::string invalidPartition;  // when set, "root" written to a partition reads back as this
    bool populated = false;        // the child has tasks: emptying its cpus fails with ENOSPC

    int readFile(const std::string& p, std::string* out) override { return base_.readFile(p, out); }
    int writeFile(const std::string& p, const std::string& d) override {
        auto slash = child_.rfind('/');
        if (p == child_.substr(0, slash) + "/cgroup.subtree_control" && d == "+cpuset")
            base_.writeFile(child_ + "/cgroup.controllers", "cpuset cpu\n");
        if (p == child_ + "/cpuset.cpus" && d == "\n" && populated) return ENOSPC;
        if (p.ends_with("/cpuset.cpus.partition") && d == "root" && !invalidPartition.empty())
            return base_.writeFile(p, invalidPartition + "\n");
        return base_.writeFile(p, d);
    }
    int appendFile(const std::string& p, const std::string& d) override {
        return base_.appendFile(p, d);
    }
    int makeDir(const std::string& p) override { return base_.makeDir(p); }
    int removeDir(const std::string& p) override { return base_.removeDir(p); }
    int removeFile(const std::string& p) override { return base_.removeFile(p); }
    int listDir(const std::string& p, bool dirsOnly, std::vector<std::string>* names) override {
        return base_.listDir(p, dirsOnly, names);
    }
    bool exists(const std::string& p) override { return base_.exists(p); }
    int setAffinity(pid_t, const std::vector<int>&) override { return 0; }
    int getAffinity(pid_t tid, std::vector<int>* cpus) override {
        return base_.getAffinity(tid, cpus);
    }
    int createSharedMemory(size_t size, int* fd) override {
        return base_.createSharedMemory(size, fd);
    }

  private:
    Sys& base_;
    std::string child_;
};

TEST_F(BackendTest, CpusetV2Start_EnablesCpusetInTheParentWhenItOffersIt) {
    makeV2Root("cpu io");  // a fresh cgroup2 mount delegates nothing to its children
    writeText(dir_ / "cgroup.controllers", "cpuset cpu io\n");
    KernelLikeSys sys(*real_, root_);
    auto backend = makeCpusetBackend(sys, config_, true);
    std::vector<Leftover> leftovers;
    std::string error;
    ASSERT_TRUE(backend->start(&leftovers, &error)) << error;
    EXPECT_EQ(trimmed(dir_ / "cgroup.subtree_control"), "+cpuset");
    EXPECT_EQ(trimmed(root_ + "/cgroup.subtree_control"), "+cpuset");
}

TEST_F(BackendTest, CpusetV2AdoptAll_MakesRootAPartitionAndDissolvesItOnStop) {
    makeV2Root();
    writeText(root_ + "/cpuset.cpus.partition", "member\n");
    config_.adoptAll = true;
    auto backend = makeCpusetBackend(*real_, config_, true);
    std::vector<Leftover> leftovers;
    std::string error;
    ASSERT_TRUE(backend->start(&leftovers, &error)) << error;
    EXPECT_EQ(trimmed(root_ + "/cpuset.cpus"), "0-3");
    EXPECT_EQ(trimmed(root_ + "/cpuset.cpus.partition"), "root");
    backend->stop();
    EXPECT_EQ(trimmed(root_ + "/cpuset.cpus.partition"), "member");
    EXPECT_EQ(trimmed(root_ + "/cpuset.cpus"), "");
}

TEST_F(BackendTest, CpusetV2AdoptAll_InvalidPartitionIsAnErrorAndUndone) {
    makeV2Root();
    writeText(root_ + "/cpuset.cpus.partition", "member\n");
    config_.adoptAll = true;
    KernelLikeSys sys(*real_, root_);
    sys.invalidPartition = "root invalid (Parent is not a partition root)";
    auto backend = makeCpusetBackend(sys, config_, true);
    std::vector<Leftover> leftovers;
    std::string error;
    EXPECT_FALSE(backend->start(&leftovers, &error));
    EXPECT_NE(error.find("Parent is not a partition root"), std::string::npos) << error;
    EXPECT_NE(error.find("--cpus must leave at least one cpu out"), std::string::npos) << error;
    EXPECT_EQ(trimmed(root_ + "/cpuset.cpus.partition"), "member");
    EXPECT_EQ(trimmed(root_ + "/cpuset.cpus"), "");
}

TEST_F(BackendTest, CpusetV2Start_DissolvesThePartitionOfAKilledArbiter) {
    makeV2Root();
    writeText(root_ + "/cpuset.cpus", "1-3\n");
    writeText(root_ + "/cpuset.cpus.partition", "root\n");
    auto backend = makeCpusetBackend(*real_, config_, true);  // no adoptAll now
    std::vector<Leftover> leftovers;
    std::string error;
    ASSERT_TRUE(backend->start(&leftovers, &error)) << error;
    EXPECT_EQ(trimmed(root_ + "/cpuset.cpus.partition"), "member");
    EXPECT_EQ(trimmed(root_ + "/cpuset.cpus"), "");
}

TEST_F(BackendTest, CpusetV2Start_PopulatedPartitionGetsTheParentsCpus) {
    makeV2Root();
    writeText(dir_ / "cpuset.cpus.effective", "0-7\n");
    writeText(root_ + "/cpuset.cpus", "1-3\n");
    writeText(root_ + "/cpuset.cpus.partition", "root\n");
    KernelLikeSys sys(*real_, root_);
    sys.populated = true;  // threads of the killed arbiter are still inside
    auto backend = makeCpusetBackend(sys, config_, true);
    std::vector<Leftover> leftovers;
    std::string error;
    ASSERT_TRUE(backend->start(&leftovers, &error)) << error;
    EXPECT_EQ(trimmed(root_ + "/cpuset.cpus.partition"), "member");
    EXPECT_EQ(trimmed(root_ + "/cpuset.cpus"), "0-7");
}

TEST_F(BackendTest, FakeTree_MoveKeepsOneMembershipAndLogsIt) {
    makeV1Root();
    FakeCgroupSys fake(*real_, root_, "/proc");
    auto backend = makeCpusetBackend(fake, config_, false);
    std::vector<Leftover> leftovers;
    std::string error;
    ASSERT_TRUE(backend->start(&leftovers, &error)) << error;
    pid_t tid = myTid();
    ASSERT_TRUE(backend->moveToCore(tid, 1, &error)) << error;
    ASSERT_TRUE(backend->moveToCore(tid, 2, &error)) << error;
    backend->flush();  // the bookkeeping files are written after the arbiter's replies
    EXPECT_EQ(trimmed(root_ + "/core-1/tasks"), "");
    EXPECT_EQ(trimmed(root_ + "/core-2/tasks"), std::to_string(tid));
    std::string log = readText(root_ + "/operations.log");
    EXPECT_NE(log.find("move " + std::to_string(tid) + " core-2"), std::string::npos) << log;
    EXPECT_NE(log.find("mkdir core-3"), std::string::npos);
    // A live member keeps its set from being removed, as in cgroupfs.
    EXPECT_EQ(fake.removeDir(root_ + "/core-2"), EBUSY);
    // Threads that do not exist cannot be moved.
    EXPECT_FALSE(backend->moveToCore(0x3ffffff0, 1, &error));
    EXPECT_NE(error.find("No such process"), std::string::npos) << error;
    backend->stop();
    EXPECT_FALSE(std::filesystem::exists(root_ + "/core-2"));
    EXPECT_FALSE(std::filesystem::exists(root_ + "/unmanaged"));
    EXPECT_EQ(trimmed(root_ + "/tasks"), std::to_string(tid));
}

TEST_F(BackendTest, FakeTreeRestart_ReportsLeftoversAndRemovesStaleSets) {
    makeV1Root();
    pid_t tid = myTid();
    {
        FakeCgroupSys fake(*real_, root_, "/proc");
        BackendConfig wide = config_;
        wide.all = {0, 1, 2, 3};
        wide.managed = {1, 2, 3};
        auto backend = makeCpusetBackend(fake, wide, false);
        std::vector<Leftover> leftovers;
        std::string error;
        ASSERT_TRUE(backend->start(&leftovers, &error)) << error;
        ASSERT_TRUE(backend->moveToCore(tid, 3, &error));
        // "Crash": no stop().
    }
    FakeCgroupSys fake(*real_, root_, "/proc");
    BackendConfig narrow = config_;
    narrow.managed = {1, 2};  // core 3 is no longer managed
    narrow.all = {0, 1, 2};
    auto backend = makeCpusetBackend(fake, narrow, false);
    std::vector<Leftover> leftovers;
    std::string error;
    ASSERT_TRUE(backend->start(&leftovers, &error)) << error;
    EXPECT_TRUE(leftovers.empty());
    EXPECT_FALSE(std::filesystem::exists(root_ + "/core-3"));
    EXPECT_EQ(trimmed(root_ + "/tasks"), std::to_string(tid));  // moved back out
    ASSERT_TRUE(backend->moveToCore(tid, 2, &error));
    auto again = makeCpusetBackend(fake, narrow, false);
    leftovers.clear();
    ASSERT_TRUE(again->start(&leftovers, &error)) << error;
    ASSERT_EQ(leftovers.size(), 1u);
    EXPECT_EQ(leftovers[0].tid, tid);
    EXPECT_EQ(leftovers[0].core, 2);
    EXPECT_EQ(trimmed(root_ + "/unmanaged/cpuset.cpus"), "0-1");  // core 2 stays its thread's
    again->stop();
}

TEST_F(BackendTest, Affinity_PinsCarriersAndComputesUnmanagedSet) {
    arbtest::FaultySys sys(*real_);
    auto backend = makeAffinityBackend(sys, config_);
    std::string error;
    ASSERT_TRUE(backend->moveToCore(50, 2, &error));
    ASSERT_TRUE(backend->setGrantedCores({2}, &error));
    ASSERT_TRUE(backend->moveToUnmanaged(51, &error));
    ASSERT_EQ(sys.affinity.size(), 2u);
    EXPECT_EQ(sys.affinity[0], (std::pair<pid_t, std::vector<int>>{50, {2}}));
    EXPECT_EQ(sys.affinity[1], (std::pair<pid_t, std::vector<int>>{51, {0, 1, 3}}));
    sys.reportedAffinity = {3};
    EXPECT_EQ(backend->pinnedCore(50), 3);
    sys.reportedAffinity = {0};  // reserved, not managed
    EXPECT_EQ(backend->pinnedCore(50), std::nullopt);
    sys.reportedAffinity = {1, 2};
    EXPECT_EQ(backend->pinnedCore(50), std::nullopt);
}

TEST_F(BackendTest, InjectedErrors_AreReportedWithPathAndReason) {
    makeV1Root();
    arbtest::FaultySys sys(*real_);
    sys.fail("mkdir", "core-2", EACCES);
    auto backend = makeCpusetBackend(sys, config_, false);
    std::vector<Leftover> leftovers;
    std::string error;
    EXPECT_FALSE(backend->start(&leftovers, &error));
    EXPECT_NE(error.find("core-2"), std::string::npos) << error;
    EXPECT_NE(error.find("Permission denied"), std::string::npos) << error;

    arbtest::FaultySys later(*real_);
    later.fail("write", "core-1/tasks", ENOSPC);
    later.fail("affinity", "60", EPERM);
    auto v1 = makeCpusetBackend(later, config_, false);
    ASSERT_TRUE(v1->start(&leftovers, &error)) << error;
    EXPECT_FALSE(v1->moveToCore(60, 1, &error));
    EXPECT_NE(error.find("No space left"), std::string::npos) << error;
    EXPECT_TRUE(v1->moveToCore(60, 2, &error)) << error;
    auto affinity = makeAffinityBackend(later, config_);
    EXPECT_FALSE(affinity->moveToCore(60, 1, &error));
    EXPECT_NE(error.find("Operation not permitted"), std::string::npos) << error;

    arbtest::FaultySys readFails(*real_);
    readFails.fail("read", "cpuset.mems", EIO);
    auto broken = makeCpusetBackend(readFails, config_, false);
    EXPECT_FALSE(broken->start(&leftovers, &error));
    EXPECT_NE(error.find("Input/output error"), std::string::npos) << error;
}

// One /proc/self/mountinfo line: a mount of `type` at `dir` with these super options.
std::string mountLine(const std::string& type, const std::string& dir, const std::string& options) {
    return "30 23 0:26 / " + dir + " rw,nosuid,relatime shared:4 - " + type + " " + type + " " +
           options + "\n";
}

TEST_F(BackendTest, Detect_PrefersV2WithCpusetThenV1ThenAffinity) {
    std::string proc = dir_ / "proc";
    std::filesystem::create_directories(proc + "/self");
    std::string v2 = dir_ / "unified";
    std::filesystem::create_directory(v2);
    writeText(v2 + "/cgroup.controllers", "cpu io\n");
    writeText(proc + "/self/mountinfo",
              mountLine("cgroup2", v2, "rw") + mountLine("cgroup", dir_ / "cs", "rw,cpuset"));
    Detected d = detectBackend(*real_, proc);
    EXPECT_EQ(d.kind, BackendKind::kCgroupV1);
    EXPECT_EQ(d.cgroupRoot, (dir_ / "cs") + "/arbrun");
    writeText(v2 + "/cgroup.controllers", "cpuset cpu io\n");
    d = detectBackend(*real_, proc);
    EXPECT_EQ(d.kind, BackendKind::kCgroupV2);
    EXPECT_EQ(d.cgroupRoot, v2 + "/arbrun");
    writeText(proc + "/self/mountinfo", mountLine("proc", "/proc", "rw"));
    EXPECT_EQ(detectBackend(*real_, proc).kind, BackendKind::kAffinity);
    // A mount point with a space is written \040 by the kernel and found where it is.
    const std::string spaced = dir_ / "cpu set";
    writeText(proc + "/self/mountinfo", mountLine("cgroup", (dir_ / "cpu\\040set"), "rw,cpuset"));
    d = detectBackend(*real_, proc);
    EXPECT_EQ(d.kind, BackendKind::kCgroupV1);
    EXPECT_EQ(d.cgroupRoot, spaced + "/arbrun");
    // No mount table at all: the affinity backend.
    std::filesystem::remove(proc + "/self/mountinfo");
    EXPECT_EQ(detectBackend(*real_, proc).kind, BackendKind::kAffinity);
}

TEST_F(BackendTest, Detect_FavorDynmodsOnAnyCgroupMount) {
    std::string proc = dir_ / "proc";
    std::filesystem::create_directories(proc + "/self");
    const std::string cs = dir_ / "cs";
    writeText(proc + "/self/mountinfo", mountLine("cgroup", cs, "rw,cpuset"));
    EXPECT_FALSE(detectBackend(*real_, proc).favorDynmods);
    // On a hierarchy without cpuset, after the one the backend uses: the lock is shared.
    writeText(proc + "/self/mountinfo",
              mountLine("cgroup", cs, "rw,cpuset") +
                  mountLine("cgroup2", "/x", "rw,nsdelegate,favordynmods"));
    Detected d = detectBackend(*real_, proc);
    EXPECT_TRUE(d.favorDynmods);
    EXPECT_EQ(d.kind, BackendKind::kCgroupV1);
    EXPECT_EQ(d.cgroupRoot, cs + "/arbrun");
    // Only a whole option, and only on a cgroup file system.
    writeText(proc + "/self/mountinfo", mountLine("cgroup", cs, "rw,favordynmodsx,cpuset") +
                                            mountLine("tmpfs", "/t", "rw,favordynmods"));
    EXPECT_FALSE(detectBackend(*real_, proc).favorDynmods);
}

}  // namespace
}  // namespace arbd
