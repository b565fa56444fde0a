// The arbiter's state machine driven directly: no sockets, a recording backend, a fake /proc tree
// and a manual clock. Covers grants, priorities, cooperative and forced reclaim with generations,
// disconnects, limits, misplaced messages, and re-adoption after a restart.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <filesystem>
#include <functional>

#include "arbiter.h"
#include "log.h"
#include "test_support.h"

namespace arbd {
namespace {

using namespace std::chrono_literals;
using arbproto::ServerMessage;

class RecordingBackend final : public Backend {
  public:
    const char* name() const override { return "recording"; }
    bool start(std::vector<Leftover>* l, std::string*) override {
        *l = leftovers;
        return true;
    }
    bool adoptProcess(pid_t pid, const std::set<pid_t>& keep, std::string*) override {
        std::string op = "adopt " + std::to_string(pid);
        for (pid_t t : keep) {
            op += ' ';
            op += std::to_string(t);
        }
        ops.push_back(op);
        return true;
    }
    bool moveToCore(pid_t tid, int core, std::string* error) override {
        if (failMoves) {
            *error = "injected";
            return false;
        }
        ops.push_back("core " + std::to_string(tid) + " " + std::to_string(core));
        return true;
    }
    bool moveToUnmanaged(pid_t tid, std::string*) override {
        ops.push_back("unmanaged " + std::to_string(tid));
        return true;
    }
    bool setGrantedCores(const std::set<int>& g, std::string*) override {
        granted = g;
        grantedWrites++;
        return true;
    }
    void stop() override { ops.push_back("stop"); }
    bool did(const std::string& op) const {
        return std::find(ops.begin(), ops.end(), op) != ops.end();
    }

    std::vector<std::string> ops;
    std::vector<Leftover> leftovers;
    std::set<int> granted;
    int grantedWrites = 0;  // setGrantedCores calls
    bool failMoves = false;
};

class FakeTransport final : public Transport {
  public:
    ~FakeTransport() override {
        for (auto& [conn, fd] : fds) close(fd);
    }
    void send(ConnId conn, const ServerMessage& m, int passFd) override {
        if (onSend) onSend(conn, m);
        sent[conn].push_back(m);
        if (passFd >= 0) fds[conn] = passFd;
    }
    void close(ConnId conn) override { closed.insert(conn); }
    template <typename T>
    const T* last(ConnId conn) const {
        auto it = sent.find(conn);
        if (it == sent.end() || it->second.empty()) return nullptr;
        return std::get_if<T>(&it->second.back());
    }
    template <typename T>
    int count(ConnId conn) const {
        auto it = sent.find(conn);
        int n = 0;
        if (it != sent.end())
            for (const auto& m : it->second) n += std::holds_alternative<T>(m);
        return n;
    }
    std::function<void(ConnId, const ServerMessage&)> onSend;  // called before recording
    std::map<ConnId, std::vector<ServerMessage>> sent;
    std::map<ConnId, int> fds;
    std::set<ConnId> closed;
};

class ArbiterTest : public ::testing::Test {
  protected:
    void SetUp() override {
        setLogLevel(LogLevel::kError);
        proc_ = dir_ / "proc";
        std::filesystem::create_directories(proc_);
    }
    void TearDown() override {
        for (auto& [conn, page] : pages_) munmap(const_cast<arbproto::SharedPage*>(page), 4096);
    }
    void startArbiter(std::vector<int> cores, std::optional<arbpolicy::LimitsConfig> limits = {},
                      std::chrono::nanoseconds sharePeriod = ArbiterConfig{}.sharePeriod) {
        ArbiterConfig config;
        config.sharePeriod = sharePeriod;
        config.releasePoll = releasePoll_;
        for (int c : cores) config.managed.cpus.push_back({c, c, 0});
        config.procRoot = proc_;
        config.limits = std::move(limits);
        config.releaseTimeout = 10ms;
        config.readoptTimeout = 100ms;
        arbiter_ = std::make_unique<Arbiter>(config, backend_, transport_, *sys_);
        std::string error;
        ASSERT_TRUE(arbiter_->start(t0_, &error)) << error;
        arbiter_->flush();
    }
    // A fake process in the fake /proc with the given threads.
    void addProcess(pid_t pid, std::vector<pid_t> tids, const std::string& comm = "app") {
        std::string base = proc_ + "/" + std::to_string(pid);
        for (pid_t t : tids) {
            std::filesystem::create_directories(base + "/task/" + std::to_string(t));
            std::filesystem::create_directories(proc_ + "/" + std::to_string(t));
        }
        arbtest::writeText(base + "/comm", comm + "\n");
        arbtest::writeText(base + "/status", "Name:\t" + comm + "\nGroups:\t10 20\n");
    }
    ConnId connect(pid_t pid, uid_t uid = 1000) {
        ConnId c = next_++;
        arbiter_->onConnect(c, Peer{pid, uid, uid});
        return c;
    }
    void send(ConnId c, const arbproto::ClientMessage& m, Clock::time_point at = {}) {
        arbiter_->onMessage(c, m, at == Clock::time_point{} ? t0_ : at);
        arbiter_->flush();
    }
    // Registers a process; returns its session connection.
    ConnId hello(pid_t pid, uid_t uid = 1000) {
        ConnId c = connect(pid, uid);
        send(c, arbproto::Hello{});
        auto* reply = transport_.last<arbproto::HelloReply>(c);
        EXPECT_TRUE(reply);
        sessions_[c] = reply ? reply->sessionId : 0;
        auto fd = transport_.fds.find(c);
        EXPECT_NE(fd, transport_.fds.end());
        void* m = mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd->second, 0);
        EXPECT_NE(m, MAP_FAILED);
        // The page may never be mapped writable by the client.
        EXPECT_EQ(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd->second, 0),
                  MAP_FAILED);
        pages_[c] = static_cast<const arbproto::SharedPage*>(m);
        return c;
    }
    ConnId carrier(ConnId session, pid_t pid, pid_t tid, bool block = true, int claim = -1) {
        ConnId c = connect(pid);
        arbproto::Attach a;
        a.sessionId = sessions_[session];
        a.tid = tid;
        a.claimedCore = claim;
        send(c, a);
        if (block) send(c, arbproto::Block{});
        return c;
    }
    void request(ConnId session, int level, uint32_t n, uint32_t min = 0, uint32_t max = UINT32_MAX,
                 Clock::time_point at = {}) {
        arbproto::SetRequest r;
        r.perPriority[level] = n;
        r.minCores = min;
        r.maxCores = max;
        send(session, r, at);
    }
    bool releaseAsked(ConnId session, int core) {
        return pages_[session]->release[core].load(std::memory_order_relaxed) != 0;
    }
    // The reclaim scenario: one managed core (1), held by pid 600's carrier 601 at priority 7; pid
    // 700 (carrier 701) then asks for it at priority 0, which starts a release.
    struct Contest {
        ConnId low, lowCarrier, high, highCarrier;
        uint64_t lowGeneration;
    };
    Contest contestOneCore() {
        startArbiter({1});
        addProcess(600, {601});
        addProcess(700, {701});
        Contest c;
        c.low = hello(600);
        c.lowCarrier = carrier(c.low, 600, 601);
        request(c.low, 7, 1);
        EXPECT_TRUE(granted(c.lowCarrier));
        c.lowGeneration = granted(c.lowCarrier) ? granted(c.lowCarrier)->generation : 0;
        c.high = hello(700);
        c.highCarrier = carrier(c.high, 700, 701);
        request(c.high, 0, 1);  // at t0_: the release deadline is t0_ + 10 ms
        return c;
    }
    arbproto::ProcessStatus statusOf(pid_t pid) {
        for (const auto& p : arbiter_->status().processes)
            if (p.pid == pid) return p;
        ADD_FAILURE() << "no process " << pid;
        return {};
    }
    const arbproto::Granted* granted(ConnId carrierConn) {
        return transport_.last<arbproto::Granted>(carrierConn);
    }
    // A tenant for the share-period tests: pid with `carriers` carriers (tids pid+1...), all
    // blocked, asking for `cores` at `level`.
    struct Tenant {
        pid_t pid;
        ConnId session;
        std::vector<ConnId> carriers;
    };
    Tenant tenant(pid_t pid, int carriers, int level, uint32_t cores, Clock::time_point at) {
        std::vector<pid_t> tids;
        for (int i = 1; i <= carriers; i++) tids.push_back(pid + i);
        addProcess(pid, tids);
        Tenant t{pid, hello(pid), {}};
        for (pid_t tid : tids) t.carriers.push_back(carrier(t.session, pid, tid));
        request(t.session, level, cores, 0, UINT32_MAX, at);
        return t;
    }
    // What a well-behaved client does: every carrier of `t` asked to give its core back
    // acknowledges and blocks again. Returns how many did.
    int releaseAsAsked(const Tenant& t, Clock::time_point at) {
        int n = 0;
        for (ConnId c : t.carriers) {
            const arbproto::Granted* g = granted(c);
            bool holds = g && transport_.count<arbproto::Granted>(c) > released_[c];
            if (!holds || !releaseAsked(t.session, g->core)) continue;
            released_[c]++;
            send(c, arbproto::ReleaseDone{g->core, g->generation}, at);
            send(c, arbproto::Block{}, at);
            n++;
        }
        return n;
    }
    int releaseAsAsked(const std::vector<Tenant>& tenants, Clock::time_point at) {
        int n = 0;
        for (const Tenant& t : tenants) n += releaseAsAsked(t, at);
        return n;
    }
    // Cores held per tenant (pending releases included), and every managed core held once.
    std::map<pid_t, size_t> holdings(const std::vector<Tenant>& tenants) {
        std::map<pid_t, size_t> out;
        for (const Tenant& t : tenants) out[t.pid] = statusOf(t.pid).granted.size();
        return out;
    }
    // Runs `periods` share periods of `period` from `start`, each followed by the clients'
    // releases 1 ms later. Returns, per tenant, in how many periods it held `oddHolding` cores.
    std::map<pid_t, int> runPeriods(const std::vector<Tenant>& tenants, Clock::time_point start,
                                    std::chrono::milliseconds period, int periods,
                                    size_t oddHolding) {
        std::map<pid_t, int> held;
        for (int k = 1; k <= periods; k++) {
            Clock::time_point tick = start + k * period;
            EXPECT_EQ(arbiter_->nextDeadline(), tick) << "period " << k;
            arbiter_->onTimer(tick);
            arbiter_->flush();
            releaseAsAsked(tenants, tick + 1ms);
            for (auto [pid, n] : holdings(tenants)) held[pid] += n == oddHolding;
            for (const Tenant& t : tenants)
                EXPECT_TRUE(statusOf(t.pid).pendingReleases.empty()) << "period " << k;
        }
        return held;
    }

    arbtest::TempDir dir_;
    std::string proc_;
    RecordingBackend backend_;
    FakeTransport transport_;
    std::unique_ptr<Sys> sys_ = makeRealSys();
    std::unique_ptr<Arbiter> arbiter_;
    Clock::time_point t0_ = Clock::now();
    std::chrono::nanoseconds releasePoll_ = ArbiterConfig{}.releasePoll;  // for startArbiter
    ConnId next_ = 100;
    std::map<ConnId, uint64_t> sessions_;
    std::map<ConnId, const arbproto::SharedPage*> pages_;
    std::map<ConnId, int> released_;  // per carrier: grants it has given back (releaseAsAsked)
};

TEST_F(ArbiterTest, Grant_IdleCoreGoesToWaitingCarrierAfterTheMove) {
    startArbiter({1, 2, 3});
    addProcess(500, {500, 501});
    ConnId s = hello(500);
    EXPECT_TRUE(backend_.did("adopt 500"));
    ConnId c = carrier(s, 500, 501);
    EXPECT_FALSE(granted(c));
    request(s, 0, 1);
    ASSERT_TRUE(transport_.last<arbproto::RequestAck>(s));
    ASSERT_TRUE(granted(c));
    int core = granted(c)->core;
    EXPECT_TRUE(backend_.did("core 501 " + std::to_string(core)));
    EXPECT_EQ(backend_.granted, std::set<int>{core});
    auto status = arbiter_->status();
    ASSERT_EQ(status.processes.size(), 1u);
    EXPECT_EQ(status.processes[0].granted, std::vector<int>{core});
    EXPECT_EQ(status.processes[0].command, "app");
    EXPECT_EQ(status.managed, (std::vector<int>{1, 2, 3}));
}

TEST_F(ArbiterTest, Grant_NeverMoreCoresThanCarriers) {
    startArbiter({1, 2, 3});
    addProcess(500, {501, 502});
    ConnId s = hello(500);
    ConnId a = carrier(s, 500, 501);
    request(s, 0, 3);
    EXPECT_TRUE(granted(a));
    EXPECT_EQ(arbiter_->status().processes[0].granted.size(), 1u);
    ConnId b = carrier(s, 500, 502);
    EXPECT_TRUE(granted(b));
    EXPECT_NE(granted(a)->core, granted(b)->core);
    EXPECT_NE(granted(a)->generation, granted(b)->generation);
}

TEST_F(ArbiterTest, Reclaim_HigherPriorityTakesCoreCooperatively) {
    auto [low, lowCarrier, high, highCarrier, gen] = contestOneCore();
    EXPECT_FALSE(granted(highCarrier));
    EXPECT_TRUE(releaseAsked(low, 1));
    EXPECT_EQ(statusOf(600).pendingReleases, std::vector<int>{1});
    send(lowCarrier, arbproto::ReleaseDone{1, gen}, t0_ + 1ms);
    ASSERT_TRUE(granted(highCarrier));
    EXPECT_EQ(granted(highCarrier)->core, 1);
    EXPECT_FALSE(releaseAsked(low, 1));
    // The grant is sent before the released carrier is moved to the unmanaged set.
    auto grantAt = std::find(backend_.ops.begin(), backend_.ops.end(), "core 701 1");
    auto outAt = std::find(backend_.ops.begin(), backend_.ops.end(), "unmanaged 601");
    EXPECT_LT(grantAt, outAt);
    EXPECT_EQ(arbiter_->counters().releases, 1u);
    EXPECT_EQ(arbiter_->counters().forcedReclaims, 0u);
    EXPECT_EQ(arbiter_->nextDeadline(), std::nullopt);  // the release's deadline is gone
    arbiter_->onTimer(t0_ + 1s);
    EXPECT_EQ(arbiter_->counters().forcedReclaims, 0u);
}

TEST_F(ArbiterTest, ReleasePoll_NoneWhileNothingIsAskedBack) {
    EXPECT_EQ(ArbiterConfig{}.releasePoll, 200us);
    startArbiter({1, 2});
    addProcess(500, {501});
    ConnId s = hello(500);
    ConnId a = carrier(s, 500, 501);
    request(s, 0, 2);
    ASSERT_TRUE(granted(a));
    EXPECT_EQ(arbiter_->releasePollUntil(), std::nullopt);  // a grant alone: the server sleeps
}

TEST_F(ArbiterTest, ReleasePoll_LastsFromTheAskUntilTheAcknowledgement) {
    auto [low, lowCarrier, high, highCarrier, gen] = contestOneCore();
    ASSERT_TRUE(releaseAsked(low, 1));
    EXPECT_EQ(arbiter_->releasePollUntil(), t0_ + 200us);
    send(lowCarrier, arbproto::ReleaseDone{1, gen}, t0_ + 50us);
    EXPECT_EQ(arbiter_->releasePollUntil(), std::nullopt);
}

TEST_F(ArbiterTest, ReleasePoll_EndsWithAForcedReclaim) {
    auto [low, lowCarrier, high, highCarrier, gen] = contestOneCore();
    ASSERT_EQ(arbiter_->releasePollUntil(), t0_ + 200us);
    arbiter_->onTimer(t0_ + 10ms);
    arbiter_->flush();
    EXPECT_EQ(arbiter_->counters().forcedReclaims, 1u);
    EXPECT_TRUE(granted(highCarrier));
    EXPECT_TRUE(releaseAsked(low, 1));  // still up until the late acknowledgement, but not polled
    EXPECT_EQ(arbiter_->releasePollUntil(), std::nullopt);
}

TEST_F(ArbiterTest, ReleasePoll_ZeroNeverPolls) {
    releasePoll_ = 0ns;
    auto [low, lowCarrier, high, highCarrier, gen] = contestOneCore();
    ASSERT_TRUE(releaseAsked(low, 1));
    EXPECT_EQ(arbiter_->releasePollUntil(), std::nullopt);
}

TEST_F(ArbiterTest, Attach_TheReleaseItStartsIsAskedBeforeTheReply) {
    startArbiter({1});
    addProcess(600, {601});
    addProcess(700, {701});
    ConnId low = hello(600);
    ConnId lowCarrier = carrier(low, 600, 601);
    request(low, 7, 1);
    ASSERT_TRUE(granted(lowCarrier));
    ConnId high = hello(700);
    request(high, 0, 1);  // no carrier yet: nothing to give it a core to
    EXPECT_FALSE(releaseAsked(low, 1));
    int repliesSeen = 0;
    bool askedAtReply = false;
    transport_.onSend = [&](ConnId, const ServerMessage& m) {
        if (!std::holds_alternative<arbproto::AttachReply>(m)) return;
        repliesSeen++;
        askedAtReply = releaseAsked(low, 1);
    };
    carrier(high, 700, 701, /*block=*/false);
    transport_.onSend = nullptr;
    EXPECT_EQ(repliesSeen, 1);
    EXPECT_TRUE(askedAtReply);
}

TEST_F(ArbiterTest, Flush_AHandOverLeavesTheUnmanagedSetUnwritten) {
    auto [low, lowCarrier, high, highCarrier, gen] = contestOneCore();
    EXPECT_EQ(backend_.granted, std::set<int>{1});
    const int writes = backend_.grantedWrites;
    send(lowCarrier, arbproto::ReleaseDone{1, gen}, t0_ + 1ms);  // released and granted again
    ASSERT_TRUE(granted(highCarrier));
    EXPECT_EQ(backend_.grantedWrites, writes);
    EXPECT_EQ(backend_.granted, std::set<int>{1});
    // The core freed for good: the set changes and is written.
    send(highCarrier, arbproto::Goodbye{});
    EXPECT_EQ(backend_.grantedWrites, writes + 1);
    EXPECT_TRUE(backend_.granted.empty());
}

TEST_F(ArbiterTest, Reclaim_ForcedAfterTheTimeout) {
    auto [low, lowCarrier, high, highCarrier, gen] = contestOneCore();
    ASSERT_EQ(arbiter_->nextDeadline(), t0_ + 10ms);
    arbiter_->onTimer(t0_ + 9ms);
    EXPECT_FALSE(granted(highCarrier));
    arbiter_->onTimer(t0_ + 10ms);
    arbiter_->flush();
    EXPECT_TRUE(backend_.did("unmanaged 601"));
    ASSERT_TRUE(granted(highCarrier));
    EXPECT_EQ(arbiter_->counters().forcedReclaims, 1u);
    // The flag stays up until the late acknowledgement.
    EXPECT_TRUE(releaseAsked(low, 1));
    EXPECT_EQ(statusOf(600).pendingReleases, std::vector<int>{1});
    send(lowCarrier, arbproto::ReleaseDone{1, gen});
    EXPECT_FALSE(releaseAsked(low, 1));
    EXPECT_TRUE(statusOf(600).pendingReleases.empty());
    // Now it may block again and be granted later.
    send(lowCarrier, arbproto::Block{});
    EXPECT_EQ(transport_.closed.count(lowCarrier), 0u);
}

TEST_F(ArbiterTest, Reclaim_StaleTimeoutNeverHitsALaterGrant) {
    auto [low, lowCarrier, high, highCarrier, firstGen] = contestOneCore();
    send(lowCarrier, arbproto::ReleaseDone{1, firstGen}, t0_ + 1ms);
    send(lowCarrier, arbproto::Block{}, t0_ + 1ms);
    // The high-priority process leaves: the low one gets the core back with a new generation.
    send(high, arbproto::Goodbye{}, t0_ + 2ms);
    ASSERT_EQ(transport_.count<arbproto::Granted>(lowCarrier), 2);
    uint64_t secondGen = granted(lowCarrier)->generation;
    EXPECT_NE(secondGen, firstGen);
    arbiter_->onTimer(t0_ + 10ms);  // the first grant's deadline
    EXPECT_EQ(arbiter_->counters().forcedReclaims, 0u);
    EXPECT_EQ(statusOf(600).granted, std::vector<int>{1});
    // A release for the old generation is ignored as stale.
    send(lowCarrier, arbproto::ReleaseDone{1, firstGen}, t0_ + 11ms);
    EXPECT_EQ(arbiter_->counters().staleReleases, 1u);
    EXPECT_EQ(statusOf(600).granted, std::vector<int>{1});
}

TEST_F(ArbiterTest, Disconnect_ReclaimsAllCoresAtOnce) {
    startArbiter({1, 2});
    addProcess(600, {601, 602});
    addProcess(700, {701});
    ConnId a = hello(600);
    ConnId a1 = carrier(a, 600, 601);
    ConnId a2 = carrier(a, 600, 602);
    request(a, 3, 2);
    ASSERT_TRUE(granted(a1) && granted(a2));
    ConnId b = hello(700);
    ConnId b1 = carrier(b, 700, 701);
    request(b, 5, 1);
    EXPECT_FALSE(granted(b1));
    arbiter_->onDisconnect(a, t0_ + 1ms);
    arbiter_->flush();
    EXPECT_TRUE(backend_.did("unmanaged 601"));
    EXPECT_TRUE(backend_.did("unmanaged 602"));
    EXPECT_TRUE(transport_.closed.count(a1) && transport_.closed.count(a2));
    ASSERT_TRUE(granted(b1));
    EXPECT_EQ(arbiter_->counters().disconnectReclaims, 2u);
    EXPECT_EQ(arbiter_->status().processes.size(), 1u);
}

TEST_F(ArbiterTest, CarrierDisconnect_ReclaimsOnlyItsCore) {
    startArbiter({1, 2});
    addProcess(600, {601, 602});
    ConnId a = hello(600);
    ConnId a1 = carrier(a, 600, 601);
    ConnId a2 = carrier(a, 600, 602);
    request(a, 0, 2);
    int core1 = granted(a1)->core;
    arbiter_->onDisconnect(a1, t0_);
    EXPECT_TRUE(backend_.did("unmanaged 601"));
    auto status = arbiter_->status();
    EXPECT_EQ(status.processes[0].granted, std::vector<int>{granted(a2)->core});
    EXPECT_EQ(status.processes[0].carriers, 1u);
    EXPECT_NE(core1, granted(a2)->core);
}

TEST_F(ArbiterTest, Limits_RequestAboveTheCapIsClamped) {
    std::string why;
    auto limits = arbpolicy::LimitsConfig::parse("user 1000 priority=5 max-cores=1\n", &why);
    ASSERT_TRUE(limits) << why;
    startArbiter({1, 2, 3}, limits);
    addProcess(600, {601, 602});
    ConnId s = hello(600, 1000);
    ConnId c1 = carrier(s, 600, 601);
    ConnId c2 = carrier(s, 600, 602);
    request(s, 0, 3, 2);
    auto* ack = transport_.last<arbproto::RequestAck>(s);
    ASSERT_TRUE(ack);
    EXPECT_EQ(ack->clamped, 1u);
    EXPECT_EQ(ack->perPriority[0], 0u);
    EXPECT_EQ(ack->perPriority[5], 3u);
    EXPECT_EQ(ack->maxCores, 1u);
    EXPECT_LE(ack->minCores, 1u);
    EXPECT_EQ(transport_.count<arbproto::Granted>(c1) + transport_.count<arbproto::Granted>(c2), 1);
    EXPECT_EQ(arbiter_->counters().clampedRequests, 1u);
    // Root (another uid) is not capped by a user entry for uid 1000.
    addProcess(800, {801});
    ConnId r = hello(800, 0);
    carrier(r, 800, 801);
    request(r, 0, 1);
    EXPECT_EQ(transport_.last<arbproto::RequestAck>(r)->clamped, 0u);
}

TEST_F(ArbiterTest, Misplaced_MessagesCloseOnlyThatConnection) {
    startArbiter({1, 2});
    addProcess(600, {601, 602});
    addProcess(700, {701});
    ConnId s = hello(600);
    ConnId c = carrier(s, 600, 601);
    request(s, 0, 1);
    ASSERT_TRUE(granted(c));
    // SET_REQUEST on a carrier connection.
    send(c, arbproto::SetRequest{});
    EXPECT_TRUE(transport_.closed.count(c));
    EXPECT_TRUE(transport_.last<arbproto::ErrorReply>(c));
    EXPECT_TRUE(backend_.did("unmanaged 601"));  // its core was reclaimed
    EXPECT_FALSE(transport_.closed.count(s));
    // BLOCK while holding a core.
    ConnId c2 = carrier(s, 600, 602);
    ASSERT_TRUE(granted(c2));
    send(c2, arbproto::Block{});
    EXPECT_TRUE(transport_.closed.count(c2));
    // Carrier from another process, for a session that is not its own.
    ConnId other = carrier(s, 700, 701, false);
    EXPECT_TRUE(transport_.closed.count(other));
    EXPECT_EQ(transport_.last<arbproto::ErrorReply>(other)->code, arbproto::ErrorCode::kPermission);
    // A tid that is not a thread of the connecting process.
    ConnId foreign = carrier(s, 600, 701, false);
    EXPECT_TRUE(transport_.closed.count(foreign));
    // Unknown session.
    ConnId stray = connect(600);
    arbproto::Attach a;
    a.sessionId = 12345;
    a.tid = 601;
    send(stray, a);
    EXPECT_EQ(transport_.last<arbproto::ErrorReply>(stray)->code,
              arbproto::ErrorCode::kUnknownSession);
    // A peer without credentials cannot register.
    ConnId anonymous = connect(0);
    send(anonymous, arbproto::Hello{});
    EXPECT_TRUE(transport_.closed.count(anonymous));
    EXPECT_FALSE(backend_.did("adopt 0"));
    // Anything before hello; status from a process connection.
    ConnId early = connect(600);
    send(early, arbproto::Block{});
    EXPECT_TRUE(transport_.closed.count(early));
    send(s, arbproto::StatusQuery{});
    EXPECT_TRUE(transport_.closed.count(s));
    EXPECT_TRUE(arbiter_->status().processes.empty());
}

TEST_F(ArbiterTest, Observer_GetsStatusOnly) {
    startArbiter({1});
    ConnId o = connect(1);
    arbproto::Hello h;
    h.role = arbproto::Role::kObserver;
    send(o, h);
    EXPECT_EQ(transport_.fds.count(o), 0u);
    send(o, arbproto::StatusQuery{});
    ASSERT_TRUE(transport_.last<arbproto::StatusReply>(o));
    send(o, arbproto::SetRequest{});
    EXPECT_TRUE(transport_.closed.count(o));
}

TEST_F(ArbiterTest, Restart_OrphanIsReadoptedByItsOwnThreadOnly) {
    backend_.leftovers = {{601, 2}, {602, 3}};
    startArbiter({1, 2, 3});
    EXPECT_EQ(backend_.granted, (std::set<int>{2, 3}));
    addProcess(600, {601, 602, 603});
    ConnId s = hello(600);
    EXPECT_TRUE(backend_.did("adopt 600 601 602"));  // orphans stay on their cores
    ConnId c = carrier(s, 600, 601, false, 2);
    auto* reply = transport_.last<arbproto::AttachReply>(c);
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, arbproto::AttachStatus::kOk);
    EXPECT_EQ(reply->core, 2);
    EXPECT_EQ(arbiter_->counters().adoptedCarriers, 1u);
    // 603 claims core 3, which is 602's: refused, moved off, asked to release.
    ConnId wrong = carrier(s, 600, 603, false, 3);
    auto* refused = transport_.last<arbproto::AttachReply>(wrong);
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, arbproto::AttachStatus::kClaimRefused);
    EXPECT_TRUE(backend_.did("unmanaged 603"));
    EXPECT_TRUE(releaseAsked(s, 3));
    send(wrong, arbproto::ReleaseDone{3, refused->generation});
    EXPECT_FALSE(releaseAsked(s, 3));
    request(s, 0, 1);
    auto status = arbiter_->status();
    EXPECT_EQ(status.processes[0].granted, std::vector<int>{2});  // kept where it was
}

TEST_F(ArbiterTest, Restart_UnclaimedOrphansAreMovedOffAfterTheTimeout) {
    backend_.leftovers = {{901, 1}};
    startArbiter({1});
    addProcess(600, {601});
    ConnId s = hello(600);
    ConnId c = carrier(s, 600, 601);
    request(s, 0, 1);
    EXPECT_FALSE(granted(c));  // core 1 still belongs to the orphan
    ASSERT_EQ(arbiter_->nextDeadline(), t0_ + 100ms);
    arbiter_->onTimer(t0_ + 100ms);
    EXPECT_TRUE(backend_.did("unmanaged 901"));
    ASSERT_TRUE(granted(c));
    EXPECT_EQ(granted(c)->core, 1);
}

TEST_F(ArbiterTest, BackendFailure_DropsTheCarrierAndKeepsTheCoreFree) {
    startArbiter({1});
    addProcess(600, {601, 602});
    ConnId s = hello(600);
    backend_.failMoves = true;
    ConnId c = carrier(s, 600, 601);
    request(s, 0, 1);
    EXPECT_TRUE(transport_.closed.count(c));
    EXPECT_FALSE(granted(c));
    EXPECT_EQ(arbiter_->counters().backendErrors, 1u);
    backend_.failMoves = false;
    ConnId c2 = carrier(s, 600, 602);
    ASSERT_TRUE(granted(c2));
}

TEST_F(ArbiterTest, Metrics_ExposeTheRequiredSeries) {
    startArbiter({1});
    addProcess(600, {601});
    ConnId s = hello(600);
    carrier(s, 600, 601);
    request(s, 2, 1);
    std::string text = arbiter_->metricsText();
    for (const char* name :
         {"arbiter_grants_total 1", "arbiter_releases_total 0", "arbiter_forced_reclaims_total 0",
          "arbiter_demand_cores{priority=\"2\"} 1", "arbiter_grant_latency_seconds_count 1",
          "arbiter_grant_latency_seconds_bucket{le=\"+Inf\"} 1", "arbiter_granted_cores 1",
          "arbiter_thread_move_seconds_count 1", "arbiter_thread_move_recent_seconds_count 1"})
        EXPECT_NE(text.find(name), std::string::npos) << name << "\n" << text;
}

// Each move of a carrier thread is timed: the low tenant's grant, then on its release the high
// tenant's grant (before its GRANTED) and, at the flush, the released carrier's way out.
TEST_F(ArbiterTest, ThreadMoveLatency_EveryMoveOfAHandOverIsObserved) {
    Contest c = contestOneCore();
    EXPECT_EQ(arbiter_->counters().threadMoveLatency.count(), 1u);
    arbiter_->onMessage(c.lowCarrier, arbproto::ReleaseDone{1, c.lowGeneration}, t0_);
    ASSERT_TRUE(granted(c.highCarrier));
    EXPECT_EQ(arbiter_->counters().threadMoveLatency.count(), 2u);
    arbiter_->flush();
    EXPECT_EQ(arbiter_->counters().threadMoveLatency.count(), 3u);
    EXPECT_NE(arbiter_->metricsText().find("arbiter_thread_move_recent_seconds_count 3"),
              std::string::npos);
}

TEST_F(ArbiterTest, SharePeriod_OddCoreAlternatesBetweenTwoEqualTenants) {
    // Three cores, two batch tenants at priority 7 asking for three: the odd core is handed over
    // every period through the cooperative release path.
    startArbiter({1, 2, 3}, {}, 100ms);
    std::vector<Tenant> t = {tenant(600, 3, 7, 3, t0_), tenant(700, 3, 7, 3, t0_)};
    EXPECT_EQ(releaseAsAsked(t, t0_), 1);  // 600 had all three until 700 came
    EXPECT_EQ(holdings(t), (std::map<pid_t, size_t>{{600, 2}, {700, 1}}));
    uint64_t releasesBefore = arbiter_->counters().releases;
    std::map<pid_t, int> held = runPeriods(t, t0_, 100ms, 20, 2);
    EXPECT_EQ(held, (std::map<pid_t, int>{{600, 10}, {700, 10}}));
    EXPECT_EQ(arbiter_->counters().oddCoreRotations, 20u);
    EXPECT_EQ(arbiter_->counters().releases - releasesBefore, 20u);  // one release per rotation
    EXPECT_EQ(arbiter_->counters().forcedReclaims, 0u);
    EXPECT_NE(arbiter_->metricsText().find("arbiter_odd_core_rotations_total 20"),
              std::string::npos);
}

TEST_F(ArbiterTest, SharePeriod_ThreeTenantsTakeTurnsAndAHigherLevelIsUntouched) {
    // Five cores: a priority-2 tenant takes one; three priority-7 tenants share four (one odd).
    startArbiter({1, 2, 3, 4, 5}, {}, 50ms);
    Tenant server = tenant(500, 2, 2, 1, t0_);
    ASSERT_EQ(statusOf(500).granted.size(), 1u);
    const std::vector<int> serverCores = statusOf(500).granted;
    std::vector<Tenant> batch = {tenant(600, 4, 7, 4, t0_), tenant(700, 4, 7, 4, t0_),
                                 tenant(800, 4, 7, 4, t0_)};
    releaseAsAsked(batch, t0_);
    std::map<pid_t, int> held = runPeriods(batch, t0_, 50ms, 30, 2);
    EXPECT_EQ(held, (std::map<pid_t, int>{{600, 10}, {700, 10}, {800, 10}}));
    EXPECT_EQ(statusOf(500).granted, serverCores);
    EXPECT_EQ(transport_.count<arbproto::Granted>(server.carriers[0]) +
                  transport_.count<arbproto::Granted>(server.carriers[1]),
              1);
    EXPECT_EQ(releaseAsAsked(server, t0_ + 2s), 0);
}

TEST_F(ArbiterTest, SharePeriod_ZeroKeepsTheHolderForever) {
    startArbiter({1, 2, 3}, {}, 0ms);
    std::vector<Tenant> t = {tenant(600, 3, 7, 3, t0_), tenant(700, 3, 7, 3, t0_)};
    releaseAsAsked(t, t0_);
    EXPECT_EQ(arbiter_->nextDeadline(), std::nullopt);
    uint64_t grants = arbiter_->counters().grants;
    for (int k = 1; k <= 20; k++) {
        arbiter_->onTimer(t0_ + k * 100ms);
        EXPECT_EQ(releaseAsAsked(t, t0_ + k * 100ms), 0);
        EXPECT_EQ(holdings(t), (std::map<pid_t, size_t>{{600, 2}, {700, 1}}));
    }
    EXPECT_EQ(arbiter_->counters().grants, grants);
    EXPECT_EQ(arbiter_->counters().oddCoreRotations, 0u);
}

TEST_F(ArbiterTest, SharePeriod_NoTimerWithoutAnOddCoreToShare) {
    startArbiter({1, 2, 3, 4}, {}, 100ms);
    // Even split: nothing to share.
    std::vector<Tenant> t = {tenant(600, 3, 7, 3, t0_), tenant(700, 3, 7, 3, t0_)};
    releaseAsAsked(t, t0_);
    EXPECT_EQ(holdings(t), (std::map<pid_t, size_t>{{600, 2}, {700, 2}}));
    EXPECT_EQ(arbiter_->nextDeadline(), std::nullopt);
    // A third tenant makes four cores uneven among three: the period starts...
    Tenant third = tenant(800, 3, 7, 3, t0_ + 1ms);
    t.push_back(third);
    releaseAsAsked(t, t0_ + 1ms);
    EXPECT_EQ(arbiter_->nextDeadline(), t0_ + 1ms + 100ms);
    // ...and stops when it leaves again.
    send(third.session, arbproto::Goodbye{}, t0_ + 2ms);
    EXPECT_EQ(arbiter_->nextDeadline(), std::nullopt);
    // Different priorities never share: a higher level's tenant takes all four, and the others
    // have nothing to take turns with.
    tenant(900, 4, 0, 4, t0_ + 3ms);
    t.pop_back();
    releaseAsAsked(t, t0_ + 3ms);
    EXPECT_EQ(statusOf(900).granted.size(), 4u);
    EXPECT_EQ(arbiter_->nextDeadline(), std::nullopt);
}

TEST_F(ArbiterTest, SharePeriod_PeriodIsNotPushedBackByOtherEvents) {
    startArbiter({1, 2, 3}, {}, 100ms);
    std::vector<Tenant> t = {tenant(600, 3, 7, 3, t0_), tenant(700, 3, 7, 3, t0_)};
    releaseAsAsked(t, t0_);
    ASSERT_EQ(arbiter_->nextDeadline(), t0_ + 100ms);
    request(t[0].session, 7, 3, 0, UINT32_MAX, t0_ + 50ms);  // same request again: a rebalance
    EXPECT_EQ(arbiter_->nextDeadline(), t0_ + 100ms);
    arbiter_->onTimer(t0_ + 99ms);  // early: nothing moves
    EXPECT_EQ(releaseAsAsked(t, t0_ + 99ms), 0);
    arbiter_->onTimer(t0_ + 100ms);
    EXPECT_EQ(releaseAsAsked(t, t0_ + 100ms), 1);
    EXPECT_EQ(holdings(t), (std::map<pid_t, size_t>{{600, 1}, {700, 2}}));
    EXPECT_EQ(arbiter_->nextDeadline(), t0_ + 200ms);
}

TEST_F(ArbiterTest, Stop_MovesCarriersOffAndStopsTheBackend) {
    startArbiter({1});
    addProcess(600, {601});
    ConnId s = hello(600);
    carrier(s, 600, 601);
    request(s, 0, 1);
    arbiter_->stop();
    EXPECT_TRUE(backend_.did("unmanaged 601"));
    EXPECT_EQ(backend_.ops.back(), "stop");
}

}  // namespace
}  // namespace arbd
