// core-arbiter as a real process on the fake backend, with libarbclient in this process's threads
// and in forked client processes: grants, cooperative and forced reclaim, kill -9 of a client and
// of the arbiter, 200 clients coming and going without leaks, malformed input, arbctl, options,
// the arbiter's own niceness.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <filesystem>

#include "arbclient/client.h"
#include "arbproto/io.h"
#include "client_harness.h"
#include "test_support.h"

namespace {

using namespace std::chrono_literals;
using arbclient::CoreArbiterClient;
using arbtest::ArbiterProcess;
using arbtest::CarrierThread;
using arbtest::waitUntil;

std::array<uint32_t, 8> at(int level, uint32_t n) {
    std::array<uint32_t, 8> r{};
    r[level] = n;
    return r;
}

class IntegrationTest : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_FALSE(dir_.path().empty());
        socket_ = dir_ / "arbiter.sock";
        root_ = dir_ / "cg";
        metrics_ = dir_ / "metrics.prom";
    }
    std::vector<std::string> args(const std::string& cpus = "0-4") {
        return {"--backend",   "fake",   "--cgroup-root",     root_,
                "--cpus",      cpus,     "--reserve",         "1",
                "--metrics",   metrics_, "--release-timeout", "10",
                "--log-level", "warn",   "--readopt-timeout", "3000"};
    }
    std::unique_ptr<ArbiterProcess> startArbiter(const std::string& cpus = "0-4") {
        auto a = std::make_unique<ArbiterProcess>(socket_, args(cpus));
        EXPECT_TRUE(a->ready());
        return a;
    }
    std::unique_ptr<CoreArbiterClient> connect() {
        std::string error;
        auto c = CoreArbiterClient::connect(socket_, &error);
        EXPECT_TRUE(c) << error;
        return c;
    }
    std::string status() {
        std::string out;
        arbtest::runCommand(std::string(ARBCTL_BIN) + " --socket " + socket_ + " status --json",
                            &out);
        return out;
    }
    // Waits until the periodically rewritten metrics file contains `text`.
    bool metricsShow(const std::string& text) {
        return waitUntil(
            [&] { return arbtest::readText(metrics_).find(text) != std::string::npos; }, 5000ms);
    }
    std::string tasksOf(const std::string& set) {
        return arbtest::readText(root_ + "/" + set + "/tasks");
    }

    arbtest::TempDir dir_;
    std::string socket_, root_, metrics_;
};

TEST_F(IntegrationTest, Client_CarrierGetsACoreAndIsRecordedOnIt) {
    auto arbiter = startArbiter();
    auto client = connect();
    ASSERT_TRUE(client);
    CarrierThread carrier(*client);
    std::string error;
    ASSERT_TRUE(client->setRequestedCores(at(0, 1), 0, 1, &error)) << error;
    ASSERT_TRUE(waitUntil([&] { return carrier.core() >= 0; }));
    int core = carrier.core();
    EXPECT_GE(core, 1);
    EXPECT_LE(core, 4);
    // The fake tree's files are written right after the grant is sent.
    EXPECT_TRUE(waitUntil([&] {
        return tasksOf("core-" + std::to_string(core)).find(std::to_string(carrier.tid())) !=
               std::string::npos;
    }));
    std::string json = status();
    EXPECT_NE(json.find("\"pid\":" + std::to_string(getpid())), std::string::npos) << json;
    EXPECT_NE(json.find("\"priority\":0,\"requested\":[1,0,0,0,0,0,0,0],\"granted\":[" +
                        std::to_string(core) + "]"),
              std::string::npos)
        << json;
    EXPECT_NE(json.find("\"managed\":[1,2,3,4]"), std::string::npos) << json;
    // Socket: owner and group only.
    struct stat st;
    ASSERT_EQ(stat(socket_.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0660u);
}

TEST_F(IntegrationTest, Reclaim_LowerPriorityReleasesCooperatively) {
    auto arbiter = startArbiter();
    auto low = connect();
    auto high = connect();
    ASSERT_TRUE(low && high);
    std::vector<std::unique_ptr<CarrierThread>> lows;
    for (int i = 0; i < 4; i++) lows.push_back(std::make_unique<CarrierThread>(*low));
    std::string error;
    ASSERT_TRUE(low->setRequestedCores(at(7, 4), 0, 4, &error)) << error;
    auto held = [&] {
        int n = 0;
        for (auto& c : lows) n += c->core() >= 0;
        return n;
    };
    ASSERT_TRUE(waitUntil([&] { return held() == 4; }));
    CarrierThread fast(*high);
    ASSERT_TRUE(high->setRequestedCores(at(0, 1), 0, 1, &error)) << error;
    ASSERT_TRUE(waitUntil([&] { return fast.core() >= 0; }));
    EXPECT_TRUE(waitUntil([&] { return held() == 3; }));
    EXPECT_TRUE(metricsShow("arbiter_releases_total 1\n"));
    EXPECT_NE(arbtest::readText(metrics_).find("arbiter_forced_reclaims_total 0\n"),
              std::string::npos);
    // The high-priority process leaves: the low one gets its fourth core back.
    fast.stop();
    high.reset();
    EXPECT_TRUE(waitUntil([&] { return held() == 4; }));
}

// The runtime's release watcher sleeps with no time-out: a release request wakes it, and so does
// its interrupt word (ReleaseWaiter::stop, which would hang otherwise).
TEST_F(IntegrationTest, ReleaseWait_ARequestWakesAWaiterWithoutTimeout) {
    auto arbiter = startArbiter("0-1");  // one managed core
    auto low = connect();
    ASSERT_TRUE(low);
    CarrierThread carrier(*low);
    std::string error;
    ASSERT_TRUE(low->setRequestedCores(at(7, 1), 0, 1, &error)) << error;
    ASSERT_TRUE(waitUntil([&] { return carrier.core() >= 0; }));
    arbtest::ReleaseWaiter waiter(*low);
    auto high = connect();
    CarrierThread fast(*high);
    ASSERT_TRUE(high->setRequestedCores(at(0, 1), 0, 1, &error)) << error;
    EXPECT_TRUE(waitUntil([&] { return waiter.asked() > 0; }))
        << "the waiter slept through the arbiter's release request";
    EXPECT_TRUE(waitUntil([&] { return fast.core() >= 0; }));
    waiter.stop();
}

// Makes futex_waitv fail with ENOSYS in the calling process from now on, as on Linux < 5.16 (a
// seccomp filter; for a forked child only). False when the filter could not be installed.
bool withoutFutexWaitv() {
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_futex_waitv, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog program{static_cast<unsigned short>(std::size(filter)), filter};
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
           syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) == 0 &&
           syscall(SYS_futex_waitv, nullptr, 0, 0, nullptr, 0) == -1 && errno == ENOSYS;
}

// Without futex_waitv the waiter falls back to timed waits on the page alone: a release request
// still reaches it, and its interrupt still ends it (within one timed wait).
TEST_F(IntegrationTest, ReleaseWait_WithoutFutexWaitvFallsBackToTimedWaits) {
    auto arbiter = startArbiter("0-1");  // one managed core
    arbtest::Child child([&] {
        if (!withoutFutexWaitv()) return 2;
        std::string error;
        auto low = CoreArbiterClient::connect(socket_, &error);
        auto high = CoreArbiterClient::connect(socket_, &error);
        if (!low || !high) return 3;
        CarrierThread carrier(*low);
        if (!low->setRequestedCores(at(7, 1), 0, 1, &error) ||
            !waitUntil([&] { return carrier.core() >= 0; })) {
            return 4;
        }
        arbtest::ReleaseWaiter waiter(*low);
        // Idle first: each wait lasts its 5 ms (or longer on a busy host), never returns at once.
        const auto t0 = std::chrono::steady_clock::now();
        std::this_thread::sleep_for(50ms);  // a span to count over, not synchronisation
        const int returns = waiter.returns();
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - t0)
                            .count();
        if (returns > ms / 2 + 5) return 7;
        CarrierThread fast(*high);
        if (!high->setRequestedCores(at(0, 1), 0, 1, &error)) return 5;
        if (!waitUntil([&] { return waiter.asked() > 0; })) return 6;
        waiter.stop();
        return 0;
    });
    EXPECT_EQ(child.wait(), 0) << "2: no seccomp filter; 3-5: set-up; 6: the request was missed; "
                                  "7: the fallback spun instead of waiting";
}

TEST_F(IntegrationTest, Fault_ClientIgnoringReleaseIsForcedAfterTimeout) {
    auto arbiter = startArbiter("0-1");  // one managed core
    arbtest::ReportPipe report;
    arbtest::Child stubborn([&] {
        std::string error;
        auto client = CoreArbiterClient::connect(socket_, &error);
        if (!client) return 1;
        CarrierThread carrier(*client, /*ignoreRelease=*/true);
        client->setRequestedCores(at(7, 1), 0, 1, &error);
        while (carrier.core() < 0) std::this_thread::sleep_for(100us);
        report.put(carrier.tid());
        pause();
        return 0;
    });
    pid_t stubbornTid = 0;
    ASSERT_TRUE(report.get(&stubbornTid));
    auto client = connect();
    CarrierThread carrier(*client);
    auto start = std::chrono::steady_clock::now();
    std::string error;
    ASSERT_TRUE(client->setRequestedCores(at(0, 1), 0, 1, &error)) << error;
    ASSERT_TRUE(waitUntil([&] { return carrier.core() == 1; }));
    auto waited = std::chrono::steady_clock::now() - start;
    EXPECT_GE(waited, 10ms);  // not before the release timeout
    EXPECT_LT(waited, 2s);
    EXPECT_TRUE(waitUntil([&] {
        return tasksOf("unmanaged").find(std::to_string(stubbornTid)) != std::string::npos;
    }));
    EXPECT_TRUE(metricsShow("arbiter_forced_reclaims_total 1\n"));
    // The stubborn process still shows the release as pending.
    EXPECT_NE(status().find("\"pendingReleases\":[1]"), std::string::npos) << status();
}

TEST_F(IntegrationTest, Fault_ClientKilledWhileHoldingCoresLosesThemAtOnce) {
    auto arbiter = startArbiter();
    arbtest::ReportPipe report;
    arbtest::Child holder([&] {
        std::string error;
        auto client = CoreArbiterClient::connect(socket_, &error);
        if (!client) return 1;
        std::vector<std::unique_ptr<CarrierThread>> carriers;
        for (int i = 0; i < 4; i++)
            carriers.push_back(std::make_unique<CarrierThread>(*client, true));
        client->setRequestedCores(at(0, 4), 0, 4, &error);
        for (auto& c : carriers)
            while (c->core() < 0) std::this_thread::sleep_for(100us);
        report.put(1);
        pause();
        return 0;
    });
    int ready = 0;
    ASSERT_TRUE(report.get(&ready));
    auto client = connect();
    std::vector<std::unique_ptr<CarrierThread>> mine;
    for (int i = 0; i < 4; i++) mine.push_back(std::make_unique<CarrierThread>(*client));
    std::string error;
    // Same priority: the even split gives us two of the holder's four cores (after its timeout).
    ASSERT_TRUE(client->setRequestedCores(at(0, 4), 0, 4, &error)) << error;
    auto held = [&] {
        int n = 0;
        for (auto& c : mine) n += c->core() >= 0;
        return n;
    };
    ASSERT_TRUE(waitUntil([&] { return held() == 2; }));
    holder.kill9();  // mid-grant: it still holds two cores and has releases pending
    EXPECT_TRUE(waitUntil([&] { return held() == 4; }, 3000ms));
    EXPECT_EQ(status().find("\"pid\":" + std::to_string(holder.pid())), std::string::npos);
}

TEST_F(IntegrationTest, Fault_ArbiterKilledAndRestartedReadoptsRunningCarriers) {
    auto arbiter = startArbiter();
    auto client = connect();
    CarrierThread a(*client), b(*client);
    std::string error;
    ASSERT_TRUE(client->setRequestedCores(at(2, 2), 0, 2, &error)) << error;
    ASSERT_TRUE(waitUntil([&] { return a.core() >= 0 && b.core() >= 0; }));
    int coreA = a.core(), coreB = b.core();
    arbiter->kill9();
    // The carriers keep running on their cores while the arbiter is gone.
    uint64_t passes = a.passes();
    EXPECT_TRUE(waitUntil([&] { return a.passes() > passes + 10; }));
    EXPECT_EQ(a.core(), coreA);
    ASSERT_TRUE(waitUntil([&] { return !client->connected(); }));
    arbiter = startArbiter();
    ASSERT_TRUE(waitUntil([&] { return client->reconnections() == 1; }));
    std::string expected = "\"granted\":[" + std::to_string(std::min(coreA, coreB)) + "," +
                           std::to_string(std::max(coreA, coreB)) + "]";
    EXPECT_TRUE(waitUntil([&] { return status().find(expected) != std::string::npos; }))
        << status();
    EXPECT_EQ(a.core(), coreA);
    EXPECT_EQ(b.core(), coreB);
    EXPECT_EQ(a.grants(), 1);  // never released or re-granted: adopted where it ran
    EXPECT_TRUE(metricsShow("arbiter_adopted_carriers_total 2\n"));
    // The new arbiter works normally: a higher priority takes a core back through the new page.
    auto high = connect();
    CarrierThread h(*high);
    ASSERT_TRUE(high->setRequestedCores(at(0, 3), 0, 3, &error)) << error;
    EXPECT_TRUE(waitUntil([&] { return h.core() >= 0; }));
}

// A restarted arbiter maps a new release page over the old one; a waiter asleep on the old page
// (with no time-out) must be moved to the new one, or it never hears of a release again.
TEST_F(IntegrationTest, Fault_ReleaseWaiterFollowsThePageAcrossARestart) {
    auto arbiter = startArbiter("0-2");  // two managed cores
    auto client = connect();
    CarrierThread a(*client), b(*client);
    std::string error;
    ASSERT_TRUE(client->setRequestedCores(at(2, 2), 0, 2, &error)) << error;
    ASSERT_TRUE(waitUntil([&] { return a.core() >= 0 && b.core() >= 0; }));
    arbtest::ReleaseWaiter waiter(*client);
    arbiter->kill9();
    ASSERT_TRUE(waitUntil([&] { return !client->connected(); }));
    arbiter = startArbiter("0-2");
    ASSERT_TRUE(waitUntil([&] { return client->reconnections() == 1; }));
    const int before = waiter.asked();
    auto high = connect();
    CarrierThread h(*high);
    ASSERT_TRUE(high->setRequestedCores(at(0, 1), 0, 1, &error)) << error;
    EXPECT_TRUE(waitUntil([&] { return waiter.asked() > before; }))
        << "the waiter stayed asleep on the dead arbiter's page";
    EXPECT_TRUE(waitUntil([&] { return h.core() >= 0; }));
    waiter.stop();
}

TEST_F(IntegrationTest, Leak_200ClientsComeAndGoLeavingNothingBehind) {
    auto arbiter = startArbiter();
    // Warm up once so lazily allocated state is in the baseline.
    {
        auto c = connect();
        CarrierThread t(*c);
        std::string error;
        c->setRequestedCores(at(0, 1), 0, 1, &error);
        ASSERT_TRUE(waitUntil([&] { return t.core() >= 0; }));
    }
    ASSERT_TRUE(waitUntil([&] { return status().find("\"processes\":[]") != std::string::npos; }));
    // The baseline may still count a status query's connection: leaks only ever add.
    int fdsBefore = arbtest::openFds(arbiter->pid());
    long rssBefore = arbtest::statusKb(arbiter->pid(), "VmRSS");
    for (int i = 0; i < 200; i++) {
        arbtest::ReportPipe report;
        arbtest::Child client([&] {
            std::string error;
            auto c = CoreArbiterClient::connect(socket_, &error);
            if (!c) return 1;
            CarrierThread t(*c);
            c->setRequestedCores(at(i % 8, 1), 0, 1, &error);
            while (t.core() < 0) std::this_thread::sleep_for(50us);
            report.put(t.core());
            if (i % 3 == 0) _exit(0);  // no goodbye, no cleanup
            t.stop();
            return 0;
        });
        int core = -1;
        ASSERT_TRUE(report.get(&core)) << "client " << i;
        ASSERT_GE(core, 1);
        if (i % 3 == 1)
            client.kill9();
        else
            client.wait();
    }
    ASSERT_TRUE(waitUntil([&] { return status().find("\"processes\":[]") != std::string::npos; }))
        << status();
    EXPECT_TRUE(waitUntil([&] { return arbtest::openFds(arbiter->pid()) <= fdsBefore; }))
        << arbtest::openFds(arbiter->pid()) << " vs " << fdsBefore;
    long rssAfter = arbtest::statusKb(arbiter->pid(), "VmRSS");
#ifdef ARBRUN_SANITIZE
    const long allowedKb = 64 * 1024;  // ASan's quarantine holds freed memory on purpose
#else
    const long allowedKb = 2048;
#endif
    EXPECT_LT(rssAfter - rssBefore, allowedKb) << rssBefore << " -> " << rssAfter << " kB";
    // Only the layout is left in the tree, and no set has members.
    std::set<std::string> entries;
    for (auto& e : std::filesystem::directory_iterator(root_)) entries.insert(e.path().filename());
    std::set<std::string> expected = {"core-1",      "core-2",         "core-3",
                                      "core-4",      "unmanaged",      "cpuset.cpus",
                                      "cpuset.mems", "operations.log", "tasks"};
    for (const auto& e : entries) EXPECT_TRUE(expected.count(e)) << "unexpected " << e;
    for (int core = 1; core <= 4; core++) {
        std::string tasks = tasksOf("core-" + std::to_string(core));
        std::istringstream in(tasks);
        pid_t tid;
        while (in >> tid) EXPECT_FALSE(std::filesystem::exists("/proc/" + std::to_string(tid)));
    }
    EXPECT_TRUE(metricsShow("arbiter_grants_total 201\n"));
    // A clean stop removes the layout; only the operations log of the fake machine stays.
    EXPECT_EQ(arbiter->stop(), 0);
    EXPECT_FALSE(std::filesystem::exists(root_ + "/core-1"));
    EXPECT_FALSE(std::filesystem::exists(socket_));
    EXPECT_FALSE(std::filesystem::exists(metrics_));
}

TEST_F(IntegrationTest, Protocol_MalformedInputClosesOnlyThatConnection) {
    auto arbiter = startArbiter();
    auto client = connect();
    CarrierThread carrier(*client);
    std::string error;
    int fd = arbproto::connectUnix(socket_, &error);
    ASSERT_GE(fd, 0) << error;
    std::vector<uint8_t> garbage(200, 0xAB);
    ASSERT_TRUE(arbproto::sendAll(fd, garbage, &error)) << error;
    arbproto::ServerStream stream(fd);
    arbproto::ServerMessage reply;
    ASSERT_EQ(stream.next(&reply, &error), arbproto::ServerStream::Result::kMessage) << error;
    EXPECT_TRUE(std::holds_alternative<arbproto::ErrorReply>(reply));
    EXPECT_EQ(stream.next(&reply, &error), arbproto::ServerStream::Result::kClosed);
    close(fd);
    ASSERT_TRUE(client->setRequestedCores(at(1, 1), 0, 1, &error)) << error;
    EXPECT_TRUE(waitUntil([&] { return carrier.core() >= 0; }));
}

TEST_F(IntegrationTest, Arbctl_WatchAndErrors) {
    auto arbiter = startArbiter();
    std::string out;
    EXPECT_EQ(arbtest::runCommand(std::string(ARBCTL_BIN) + " --socket " + socket_ +
                                      " watch --interval 10 --count 2",
                                  &out),
              0);
    EXPECT_NE(out.find("managed cores: 1,2,3,4"), std::string::npos) << out;
    EXPECT_EQ(
        arbtest::runCommand(std::string(ARBCTL_BIN) + " --socket " + socket_ + " status", &out), 0);
    EXPECT_NE(out.find("PENDING-RELEASE"), std::string::npos) << out;
    EXPECT_EQ(arbtest::runCommand(
                  std::string(ARBCTL_BIN) + " --socket " + (dir_ / "none") + " status", &out),
              1);
    EXPECT_NE(out.find("cannot reach core arbiter"), std::string::npos) << out;
    EXPECT_EQ(
        arbtest::runCommand(std::string(ARBCTL_BIN) + " --socket " + socket_ + " frobnicate", &out),
        2);
}

TEST_F(IntegrationTest, Daemon_SecondInstanceOnTheSameSocketIsRefused) {
    auto arbiter = startArbiter();
    std::string out;
    std::string cmd = std::string(ARBITER_BIN) + " --socket " + socket_ +
                      " --backend fake --cgroup-root " + (dir_ / "other") + " --cpus 0-2";
    EXPECT_EQ(arbtest::runCommand(cmd, &out), 1);
    EXPECT_NE(out.find("another core arbiter is listening"), std::string::npos) << out;
    EXPECT_TRUE(arbtest::canConnect(socket_));
}

TEST_F(IntegrationTest, Daemon_BadOptionsExitTwoWithOneLine) {
    std::string base = std::string(ARBITER_BIN) + " --socket " + socket_ +
                       " --backend fake --cgroup-root " + root_ + " ";
    for (std::string bad :
         {"--reserve 0", "--reserve x", "--cpus abc", "--cpus 0-4 --reserve 5",
          "--release-timeout 0", "--metrics 10.0.0.1:80", "--metrics localhost:99999",
          "--log-level loud", "--backend nope", "--frobnicate", "--config /nonexistent",
          "--cpus 0-5000", "--share-period -1", "--share-period 1s", "--release-poll -1",
          "--release-poll 1ms", "--nice -21", "--nice 20", "--nice low"}) {
        std::string out;
        EXPECT_EQ(arbtest::runCommand(base + bad, &out), 2) << bad << ": " << out;
        EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << bad << ": " << out;
        EXPECT_EQ(out.rfind("core-arbiter: ", 0), 0u) << out;
    }
    std::string out;
    EXPECT_EQ(arbtest::runCommand(std::string(ARBITER_BIN) + " --backend fake", &out), 2);
    EXPECT_EQ(arbtest::runCommand(std::string(ARBITER_BIN) + " --help", &out), 0);
    for (const char* option :
         {"--socket", "--backend", "--cgroup-root", "--cpus", "--reserve", "--config",
          "--release-timeout", "--metrics", "--log-level", "--adopt-all-processes",
          "--share-period", "--release-poll", "--nice"})
        EXPECT_NE(out.find(option), std::string::npos) << option;
    EXPECT_FALSE(std::filesystem::exists(socket_));
}

TEST_F(IntegrationTest, Limits_RequestIsClampedAndReloadedOnSighup) {
    std::string config = dir_ / "limits.conf";
    std::string me = std::to_string(getuid());
    arbtest::writeText(config, "user " + me + " priority=5 max-cores=1\n");
    auto a = args();
    a.insert(a.end(), {"--config", config});
    ArbiterProcess arbiter(socket_, a);
    ASSERT_TRUE(arbiter.ready());
    auto client = connect();
    std::vector<std::unique_ptr<CarrierThread>> carriers;
    for (int i = 0; i < 3; i++) carriers.push_back(std::make_unique<CarrierThread>(*client));
    auto held = [&] {
        int n = 0;
        for (auto& c : carriers) n += c->core() >= 0;
        return n;
    };
    std::string error;
    ASSERT_TRUE(client->setRequestedCores(at(0, 3), 0, 3, &error)) << error;
    ASSERT_TRUE(waitUntil([&] { return held() == 1; }));
    EXPECT_NE(status().find("\"priority\":5,\"requested\":[0,0,0,0,0,3,0,0]"), std::string::npos)
        << status();
    EXPECT_TRUE(metricsShow("arbiter_clamped_requests_total 1\n"));
    // A new file applies (on SIGHUP) to the next request.
    arbtest::writeText(config, "user " + me + " priority=1 max-cores=2\n");
    ASSERT_TRUE(kill(arbiter.pid(), SIGHUP) == 0);
    EXPECT_TRUE(waitUntil([&] {
        client->setRequestedCores(at(0, 3), 0, 3, &error);
        return held() == 2;
    }));
    EXPECT_NE(status().find("\"priority\":1,"), std::string::npos) << status();
    EXPECT_TRUE(arbiter.stop() == 0);
}

TEST_F(IntegrationTest, Metrics_ServedOverLoopbackHttp) {
    // Find a free port, then let the arbiter bind it.
    int probe = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    ASSERT_EQ(bind(probe, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    getsockname(probe, reinterpret_cast<sockaddr*>(&addr), &len);
    int port = ntohs(addr.sin_port);
    close(probe);
    auto a = args();
    a[9] = "127.0.0.1:" + std::to_string(port);  // replaces the --metrics file path
    ArbiterProcess arbiter(socket_, a);
    ASSERT_TRUE(arbiter.ready());
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    std::string request = "GET /metrics HTTP/1.0\r\n\r\n";
    ASSERT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
    std::string response;
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0) response.append(buf, n);
    close(fd);
    EXPECT_EQ(response.rfind("HTTP/1.0 200 OK", 0), 0u) << response;
    EXPECT_NE(response.find("arbiter_grant_latency_seconds_bucket"), std::string::npos);
    EXPECT_NE(response.find("arbiter_demand_cores{priority=\"7\"} 0"), std::string::npos);
}

// The niceness of process `pid` (its main thread's, where the arbiter sets its own).
int niceOf(pid_t pid) {
    return getpriority(PRIO_PROCESS, id_t(pid));
}

TEST_F(IntegrationTest, Nice_DefaultAndGiven_AreTheArbitersOwn) {
    if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: lowering niceness needs root (CAP_SYS_NICE)";
    {
        auto arbiter = startArbiter();
        EXPECT_EQ(niceOf(arbiter->pid()), -10);
    }
    std::vector<std::string> given = args();
    given.insert(given.end(), {"--nice", "-3"});
    ArbiterProcess arbiter(socket_, given);
    ASSERT_TRUE(arbiter.ready());
    EXPECT_EQ(niceOf(arbiter.pid()), -3);
}

TEST_F(IntegrationTest, Nice_WithoutCapSysNice_WarnsAndServesAtItsOwn) {
    arbtest::ArbiterLaunch launch;
    launch.stderrPath = dir_ / "arbiter.err";
    if (geteuid() == 0) {
        // Root keeps every capability across exec unless its bounding and inheritable sets lose it.
        launch.wrapper = {"/usr/bin/setpriv", "--bounding-set", "-sys_nice",
                          "--inh-caps",       "-sys_nice",      "--"};
        if (access(launch.wrapper[0].c_str(), X_OK) != 0)
            GTEST_SKIP() << "SKIPPED: needs setpriv (util-linux) to drop CAP_SYS_NICE";
    } else {
        rlimit limit{};
        if (getrlimit(RLIMIT_NICE, &limit) == 0 && limit.rlim_cur >= 30)  // allows niceness -10
            GTEST_SKIP() << "SKIPPED: RLIMIT_NICE lets this user lower its niceness";
    }
    const int own = getpriority(PRIO_PROCESS, 0);  // this thread's, which the child inherits
    ArbiterProcess arbiter(socket_, args(), 10000ms, launch);  // --log-level warn
    ASSERT_TRUE(arbiter.ready());
    EXPECT_EQ(niceOf(arbiter.pid()), own);
    auto client = connect();  // it serves
    ASSERT_TRUE(client);
    const std::string err = arbtest::readText(launch.stderrPath);
    const std::string warning = "core-arbiter: warn: cannot lower its niceness from ";
    const size_t at = err.find(warning);
    ASSERT_NE(at, std::string::npos) << err;
    EXPECT_EQ(err.find(warning, at + 1), std::string::npos) << "said once: " << err;
    EXPECT_NE(err.find("CAP_SYS_NICE"), std::string::npos) << err;
}

}  // namespace
