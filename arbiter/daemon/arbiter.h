// The arbiter's state machine: sessions, carriers, grants, releases and their deadlines. It has no
// sockets and no threads: the server feeds it events (connect, message, disconnect, timer) and it
// answers through a Transport and places threads through a Backend. Single-threaded: every method
// is called from the event loop only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "arbpolicy/allocation.h"
#include "arbpolicy/limits.h"
#include "arbproto/messages.h"
#include "backend.h"
#include "metrics.h"
#include "release_page.h"
#include "sys.h"

namespace arbd {

using ConnId = uint64_t;
using Clock = std::chrono::steady_clock;

struct Peer {
    pid_t pid = 0;
    uid_t uid = 0;
    gid_t gid = 0;
};

// Implemented by the server (sockets) and by tests.
class Transport {
  public:
    virtual ~Transport() = default;
    // Sends one message; takes ownership of passFd (closed after sending) when >= 0.
    virtual void send(ConnId conn, const arbproto::ServerMessage& message, int passFd = -1) = 0;
    // Closes a connection the arbiter is done with. The arbiter has already forgotten it: the
    // server must not report it back through onDisconnect.
    virtual void close(ConnId conn) = 0;
};

struct ArbiterConfig {
    arbpolicy::Topology managed;  // the cores handed out
    std::chrono::nanoseconds releaseTimeout = std::chrono::milliseconds(10);
    std::chrono::nanoseconds readoptTimeout = std::chrono::milliseconds(2000);
    // Odd-core time-sharing: while equal claimants of a level want a core that does not divide
    // evenly among them, the allocation is re-run this often with the odd cores handed on to the
    // claimant that had one least recently (arbpolicy::OddCoreTurns). Zero: never (the holder keeps
    // it, the old stable behaviour).
    std::chrono::nanoseconds sharePeriod = std::chrono::milliseconds(100);
    // After asking for a core back, the server looks for the acknowledgement without sleeping
    // (yielding the CPU between looks) for at most this long: an arbiter asleep in epoll_wait on
    // an idle CPU takes a cross-CPU wake-up to read RELEASE_DONE, ~60 us of a ~200 us release on
    // a 2-vCPU VM. Bounded per release, so an idle machine still never spins. Zero: never.
    std::chrono::nanoseconds releasePoll = std::chrono::microseconds(200);
    std::optional<arbpolicy::LimitsConfig> limits;
    std::string procRoot = "/proc";
    uint64_t epoch = 0;  // distinguishes arbiter instances
};

class Arbiter {
  public:
    Arbiter(ArbiterConfig config, Backend& backend, Transport& transport, Sys& sys);
    ~Arbiter();

    // Builds the backend layout and takes over a crashed instance's leftovers.
    bool start(Clock::time_point now, std::string* error);
    // Clean shutdown: every carrier leaves its core, the backend layout is removed.
    void stop();

    void onConnect(ConnId conn, const Peer& peer);
    void onMessage(ConnId conn, const arbproto::ClientMessage& message, Clock::time_point now);
    // Malformed input: the connection is answered with an error (best effort) and dropped.
    void onProtocolError(ConnId conn, const std::string& why, Clock::time_point now);
    void onDisconnect(ConnId conn, Clock::time_point now);
    void onTimer(Clock::time_point now);
    // Work deferred to after the replies of one batch of events (unmanaged-set updates, moving
    // released carriers out of their old core's set). Call once per event-loop iteration.
    void flush();
    std::optional<Clock::time_point> nextDeadline() const;
    // Until when the server should poll instead of sleeping: the end of the poll window
    // (ArbiterConfig::releasePoll) of the latest release still awaited; none when none is.
    std::optional<Clock::time_point> releasePollUntil() const;

    void setLimits(std::optional<arbpolicy::LimitsConfig> limits);
    arbproto::StatusReply status() const;
    std::string metricsText() const;
    const Counters& counters() const { return counters_; }

  private:
    enum class CarrierState { kIdle, kWaiting, kGranted, kReleasing, kForcedOut };
    struct Deadline {
        uint64_t carrier;
        uint64_t generation;
    };
    using Deadlines = std::multimap<Clock::time_point, Deadline>;
    struct Carrier {
        uint64_t id = 0;
        ConnId conn = 0;
        uint64_t session = 0;
        pid_t tid = 0;
        CarrierState state = CarrierState::kIdle;
        int core = -1;  // set in kGranted, kReleasing, kForcedOut
        uint64_t generation = 0;
        std::optional<Deadlines::iterator> deadline;  // while kReleasing
        Clock::time_point releaseAskedAt{};           // while kReleasing: when revoke() asked
    };
    struct Process {
        uint64_t session = 0;
        ConnId conn = 0;
        Peer peer;
        std::string command;
        std::vector<gid_t> groups;
        bool hasRequest = false;
        arbproto::SetRequest request;  // after clamping
        std::unique_ptr<ReleasePage> page;
        std::set<uint64_t> carriers;
        std::map<int, Clock::time_point> dueSince;  // cores allocated but not yet granted
        arbpolicy::TurnStamps oddCoreTurns{};       // from the last allocation, fed to the next one
        bool waitsForOddCore = false;               // in the last allocation
    };
    struct CoreSlot {
        uint64_t owner = 0;   // carrier holding it (kGranted/kReleasing), 0 when free
        pid_t orphanTid = 0;  // left by a crashed instance, awaiting re-adoption
    };
    enum class ConnKind { kNew, kProcess, kCarrier, kObserver };
    struct Conn {
        Peer peer;
        ConnKind kind = ConnKind::kNew;
        uint64_t ref = 0;  // session (kProcess) or carrier id (kCarrier)
    };
    void hello(ConnId conn, Conn& c, const arbproto::Hello& m);
    bool attach(ConnId conn, Conn& c, const arbproto::Attach& m, arbproto::AttachReply* reply);
    bool claim(Process& p, Carrier& carrier, int core, arbproto::AttachReply* reply);
    void setRequest(ConnId conn, Process& p, const arbproto::SetRequest& m, Clock::time_point now);
    void releaseDone(Carrier& carrier, const arbproto::ReleaseDone& m, Clock::time_point now);
    void fail(ConnId conn, arbproto::ErrorCode code, const std::string& why);

    // Recomputes the allocation; `rotate` hands the odd cores on (end of a share period).
    void rebalance(Clock::time_point now, bool rotate = false);
    void armSharePeriod(bool anyWaiting, Clock::time_point now);
    bool grant(Process& p, int core, Clock::time_point now);
    void revoke(Process& p, Carrier& carrier, Clock::time_point now);
    void freeCore(int core);
    void cancelDeadline(Carrier& carrier);
    void unmanage(Carrier& carrier, const char* why);
    bool moveThread(pid_t tid, int core, std::string* error);  // core -1: the unmanaged set
    void removeCarrier(uint64_t id, bool closeConn);
    void removeProcess(uint64_t session, bool closeConn);
    void expireOrphans();
    Carrier* carrierOf(uint64_t id);
    Process* processOf(uint64_t session);
    uint64_t newSessionId();
    bool isManaged(int core) const { return cores_.count(core) > 0; }

    ArbiterConfig cfg_;
    Backend& backend_;
    Transport& transport_;
    Sys& sys_;
    ProcInfo proc_;
    std::map<ConnId, Conn> conns_;
    std::map<uint64_t, std::unique_ptr<Process>> processes_;
    std::map<uint64_t, std::unique_ptr<Carrier>> carriers_;
    std::map<int, CoreSlot> cores_;
    Deadlines releaseDeadlines_;
    std::optional<Clock::time_point> orphanDeadline_;
    std::optional<Clock::time_point> shareDeadline_;  // armed only while some process waits
    std::vector<uint64_t> toUnmanage_;  // carriers released cooperatively, moved out in flush()
    std::set<int> backendGranted_;      // what the unmanaged set should exclude
    std::optional<std::set<int>> writtenGranted_;  // what it excludes: the last write that worked
    bool grantedDirty_ = false;
    uint64_t nextCarrierId_ = 1;
    uint64_t nextGeneration_ = 1;
    uint64_t sessionSalt_ = 0;
    uint64_t sessionCounter_ = 0;
    Counters counters_;
};

}  // namespace arbd
