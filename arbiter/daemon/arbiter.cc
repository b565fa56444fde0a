#include "arbiter.h"

#include <sys/random.h>
#include <unistd.h>

#include <algorithm>

#include "log.h"

namespace arbd {

using arbproto::ErrorCode;

namespace {
// Histogram unit.
double seconds(Clock::duration d) {
    return std::chrono::duration<double>(d).count();
}
}  // namespace

Arbiter::Arbiter(ArbiterConfig config, Backend& backend, Transport& transport, Sys& sys)
    : cfg_(std::move(config)),
      backend_(backend),
      transport_(transport),
      sys_(sys),
      proc_(sys, cfg_.procRoot) {
    for (const auto& cpu : cfg_.managed.cpus) cores_[cpu.id] = CoreSlot{};
    // Session ids are unguessable so a process cannot attach carriers to another's session
    // (the peer pid is checked as well).
    if (getrandom(&sessionSalt_, sizeof(sessionSalt_), 0) != sizeof(sessionSalt_))
        sessionSalt_ =
            static_cast<uint64_t>(Clock::now().time_since_epoch().count()) * 0x9e3779b97f4a7c15ull;
}

Arbiter::~Arbiter() = default;

// Orphans (threads a crashed instance left on cores) keep their cores until re-adopted or until
// the re-adoption timeout; a second thread on the same core is moved off at once.
bool Arbiter::start(Clock::time_point now, std::string* error) {
    std::vector<Leftover> leftovers;
    if (!backend_.start(&leftovers, error)) return false;
    for (const auto& l : leftovers) {
        auto it = cores_.find(l.core);
        if (it == cores_.end() || it->second.orphanTid != 0) {
            std::string ignored;
            moveThread(l.tid, -1, &ignored);
            continue;
        }
        it->second.orphanTid = l.tid;
        backendGranted_.insert(l.core);
        logf(LogLevel::kInfo,
             "thread %d left on core %d by a previous arbiter; awaiting its process", l.tid,
             l.core);
    }
    if (!backendGranted_.empty()) {
        orphanDeadline_ = now + cfg_.readoptTimeout;
        grantedDirty_ = true;
    }
    return true;
}

// Clean shutdown leaves no carrier pinned and no cpuset behind.
void Arbiter::stop() {
    for (auto& [id, c] : carriers_)
        if (c->state == CarrierState::kGranted || c->state == CarrierState::kReleasing)
            unmanage(*c, "arbiter stopping");
    backend_.stop();
}

// Peer identity comes from the server (SO_PEERCRED), never from the client's messages.
void Arbiter::onConnect(ConnId conn, const Peer& peer) {
    conns_[conn] = Conn{peer, ConnKind::kNew, 0};
    counters_.connections++;
}

// Tells the peer why before its connection is closed; counted as a protocol error.
void Arbiter::fail(ConnId conn, ErrorCode code, const std::string& why) {
    logf(LogLevel::kWarn, "closing connection %llu: %s", static_cast<unsigned long long>(conn),
         why.c_str());
    counters_.protocolErrors++;
    transport_.send(conn, arbproto::ErrorReply{code, why});
}

// Malformed frame: error reply, then the same clean-up as a disconnect.
void Arbiter::onProtocolError(ConnId conn, const std::string& why, Clock::time_point now) {
    if (!conns_.count(conn)) return;
    fail(conn, ErrorCode::kProtocol, why);
    onDisconnect(conn, now);
    transport_.close(conn);
}

// Dispatch by connection role and state; anything not allowed there is a protocol error that ends
// this connection only. Every accepted message may change the allocation, so rebalance after it.
void Arbiter::onMessage(ConnId conn, const arbproto::ClientMessage& message,
                        Clock::time_point now) {
    auto it = conns_.find(conn);
    if (it == conns_.end()) return;
    Conn& c = it->second;
    const char* misplaced = nullptr;
    switch (c.kind) {
        case ConnKind::kNew:
            if (auto* m = std::get_if<arbproto::Hello>(&message)) {
                hello(conn, c, *m);
            } else if (auto* a = std::get_if<arbproto::Attach>(&message)) {
                arbproto::AttachReply reply;
                if (attach(conn, c, *a, &reply)) {
                    // A process's first carrier is what lets the allocation give it a core, so
                    // this is where a release for it starts: ask before replying (~12 us of
                    // sendto), the carrier blocks for its grant only after the reply anyway.
                    rebalance(now);
                    transport_.send(conn, reply);
                    return;
                }
            } else {
                misplaced = "expected hello or attach first";
            }
            break;
        case ConnKind::kProcess: {
            Process* p = processOf(c.ref);
            if (auto* m = std::get_if<arbproto::SetRequest>(&message)) {
                setRequest(conn, *p, *m, now);
            } else if (std::holds_alternative<arbproto::Goodbye>(message)) {
                removeProcess(c.ref, true);
            } else {
                misplaced = "message not allowed on a process connection";
            }
            break;
        }
        case ConnKind::kCarrier: {
            Carrier* k = carrierOf(c.ref);
            if (std::holds_alternative<arbproto::Block>(message) &&
                k->state == CarrierState::kIdle) {
                k->state = CarrierState::kWaiting;
            } else if (auto* m = std::get_if<arbproto::ReleaseDone>(&message)) {
                releaseDone(*k, *m, now);
            } else if (std::holds_alternative<arbproto::Goodbye>(message)) {
                removeCarrier(k->id, true);
            } else {
                misplaced = "message not allowed on a carrier connection in this state";
            }
            break;
        }
        case ConnKind::kObserver:
            if (std::holds_alternative<arbproto::StatusQuery>(message))
                transport_.send(conn, status());
            else
                misplaced = "observers may only query status";
            break;
    }
    if (misplaced) {
        onProtocolError(conn, misplaced, now);
        return;
    }
    rebalance(now);
}

// Registers a process (or an observer): a fresh sealed release page, its threads moved to the
// unmanaged set (except threads still on cores from before a restart).
void Arbiter::hello(ConnId conn, Conn& c, const arbproto::Hello& m) {
    arbproto::HelloReply reply;
    reply.epoch = cfg_.epoch;
    if (m.role == arbproto::Role::kObserver) {
        c.kind = ConnKind::kObserver;
        transport_.send(conn, reply);
        return;
    }
    // Without a peer pid there is nothing to place (and "0" written to a cgroup means the writer).
    if (c.peer.pid <= 0) {
        fail(conn, ErrorCode::kPermission, "peer credentials unavailable");
        conns_.erase(conn);
        transport_.close(conn);
        return;
    }
    auto p = std::make_unique<Process>();
    std::string error;
    int fd = -1;
    p->page = ReleasePage::create(sys_, cfg_.epoch, &fd, &error);
    if (!p->page) {
        logf(LogLevel::kError, "cannot create release page for pid %d: %s", c.peer.pid,
             error.c_str());
        transport_.send(conn,
                        arbproto::ErrorReply{ErrorCode::kInternal, "no release page: " + error});
        transport_.close(conn);
        conns_.erase(conn);
        return;
    }
    p->session = newSessionId();
    p->conn = conn;
    p->peer = c.peer;
    p->command = proc_.command(c.peer.pid);
    p->groups = proc_.groups(c.peer.pid);
    // Threads a crashed instance left on cores stay where they are until re-adopted.
    std::set<pid_t> keep;
    for (const auto& [core, slot] : cores_)
        if (slot.orphanTid && proc_.threadBelongsTo(c.peer.pid, slot.orphanTid))
            keep.insert(slot.orphanTid);
    if (!backend_.adoptProcess(c.peer.pid, keep, &error)) {
        counters_.backendErrors++;
        logf(LogLevel::kWarn, "cannot move pid %d to the unmanaged set: %s", c.peer.pid,
             error.c_str());
    }
    c.kind = ConnKind::kProcess;
    c.ref = p->session;
    reply.pageSize = arbproto::kSharedPageSize;
    reply.sessionId = p->session;
    logf(LogLevel::kInfo, "process %d (%s, uid %u) registered%s", c.peer.pid, p->command.c_str(),
         c.peer.uid, (m.flags & arbproto::kHelloFlagReconnect) ? " again after a restart" : "");
    processes_[p->session] = std::move(p);
    transport_.send(conn, reply, fd);
}

// A carrier joins a session: only from the session's own pid and for one of its own threads.
// Returns false when refused (the connection is closed); else the caller sends *reply.
bool Arbiter::attach(ConnId conn, Conn& c, const arbproto::Attach& m,
                     arbproto::AttachReply* reply) {
    Process* p = processOf(m.sessionId);
    const char* refusal = nullptr;
    ErrorCode code = ErrorCode::kPermission;
    if (!p) {
        refusal = "unknown session";
        code = ErrorCode::kUnknownSession;
    } else if (p->peer.pid != c.peer.pid) {
        refusal = "carrier connection from another process";
    } else if (!proc_.threadBelongsTo(c.peer.pid, m.tid)) {
        refusal = "tid is not a thread of the connecting process";
    } else {
        for (uint64_t id : p->carriers)
            if (carrierOf(id)->tid == m.tid) refusal = "tid already registered";
    }
    if (refusal) {
        fail(conn, code, refusal);
        conns_.erase(conn);
        transport_.close(conn);
        return false;
    }
    auto carrier = std::make_unique<Carrier>();
    carrier->id = nextCarrierId_++;
    carrier->conn = conn;
    carrier->session = p->session;
    carrier->tid = m.tid;
    c.kind = ConnKind::kCarrier;
    c.ref = carrier->id;
    if (m.claimedCore >= 0) claim(*p, *carrier, m.claimedCore, reply);
    p->carriers.insert(carrier->id);
    carriers_[carrier->id] = std::move(carrier);
    return true;
}

// A carrier still running on `core` after an arbiter restart. It is re-adopted when the crashed
// instance left exactly this thread on that core (or, for the affinity backend, it is pinned there
// and the core is free); otherwise it is moved off and asked to release through the page.
bool Arbiter::claim(Process& p, Carrier& carrier, int core, arbproto::AttachReply* reply) {
    auto it = cores_.find(core);
    bool adopt = false;
    if (it != cores_.end() && !p.page->isSet(core)) {
        CoreSlot& slot = it->second;
        if (slot.orphanTid == carrier.tid) {
            adopt = true;
        } else if (slot.orphanTid == 0 && slot.owner == 0) {
            adopt = backend_.pinnedCore(carrier.tid) == core;
        }
    }
    carrier.core = core;
    carrier.generation = nextGeneration_++;
    reply->core = core;
    reply->generation = carrier.generation;
    if (adopt) {
        it->second.orphanTid = 0;
        it->second.owner = carrier.id;
        carrier.state = CarrierState::kGranted;
        backendGranted_.insert(core);
        grantedDirty_ = true;
        counters_.adoptedCarriers++;
        reply->status = arbproto::AttachStatus::kOk;
        logf(LogLevel::kInfo, "re-adopted thread %d of pid %d on core %d", carrier.tid, p.peer.pid,
             core);
        return true;
    }
    std::string error;
    moveThread(carrier.tid, -1, &error);
    carrier.state = CarrierState::kForcedOut;
    p.page->set(core, true);
    reply->status = arbproto::AttachStatus::kClaimRefused;
    logf(LogLevel::kInfo, "refused claim of thread %d of pid %d on core %d", carrier.tid,
         p.peer.pid, core);
    return false;
}

// Applies the limits (clamped requests are logged), stores the request, rebalances, then acks.
void Arbiter::setRequest(ConnId conn, Process& p, const arbproto::SetRequest& m,
                         Clock::time_point now) {
    arbproto::SetRequest clamped = m;
    arbproto::RequestAck ack;
    if (cfg_.limits) {
        arbpolicy::ProcessRequest r;
        r.key = p.session;
        r.requested = m.perPriority;
        r.minCores = m.minCores;
        r.maxCores = m.maxCores;
        std::string why;
        auto limit = cfg_.limits->limitFor(p.peer.uid, p.groups);
        if (cfg_.limits->clamp(limit, &r, &why)) {
            counters_.clampedRequests++;
            ack.clamped = 1;
            logf(LogLevel::kInfo, "request of pid %d (uid %u) clamped: %s", p.peer.pid, p.peer.uid,
                 why.c_str());
        }
        clamped.perPriority = r.requested;
        clamped.minCores = r.minCores;
        clamped.maxCores = r.maxCores;
    }
    p.request = clamped;
    p.hasRequest = true;
    ack.perPriority = clamped.perPriority;
    ack.minCores = clamped.minCores;
    ack.maxCores = clamped.maxCores;
    // Grants first: the carrier that gets a core should not wait behind the requester's wake-up.
    rebalance(now);
    transport_.send(conn, ack);
}

// A carrier gave its core back. Only the current generation counts; the released carrier is moved
// to the unmanaged set in flush(), after the core's next grant went out.
void Arbiter::releaseDone(Carrier& carrier, const arbproto::ReleaseDone& m, Clock::time_point now) {
    bool holds = carrier.state == CarrierState::kGranted ||
                 carrier.state == CarrierState::kReleasing ||
                 carrier.state == CarrierState::kForcedOut;
    if (!holds || carrier.core != m.core || carrier.generation != m.generation) {
        counters_.staleReleases++;
        logf(LogLevel::kDebug, "stale release of core %d by thread %d ignored", m.core,
             carrier.tid);
        return;
    }
    Process* p = processOf(carrier.session);
    cancelDeadline(carrier);
    if (carrier.state == CarrierState::kReleasing) {
        const double latency = seconds(now - carrier.releaseAskedAt);
        counters_.releaseLatency.observe(latency);
        counters_.recentReleaseLatency.observe(latency);
    }
    if (carrier.state != CarrierState::kForcedOut) {
        freeCore(carrier.core);
        counters_.releases++;
        toUnmanage_.push_back(carrier.id);
    }
    p->page->set(carrier.core, false);
    carrier.state = CarrierState::kIdle;
    carrier.core = -1;
}

// A closed session loses every core at once; a closed carrier connection loses its core.
void Arbiter::onDisconnect(ConnId conn, Clock::time_point now) {
    auto it = conns_.find(conn);
    if (it == conns_.end()) return;
    Conn c = it->second;
    conns_.erase(it);
    if (c.kind == ConnKind::kProcess)
        removeProcess(c.ref, false);
    else if (c.kind == ConnKind::kCarrier)
        removeCarrier(c.ref, false);
    rebalance(now);
}

// Moves a carrier off its core right now (forced reclaim, disconnect, refused claim, shutdown).
void Arbiter::unmanage(Carrier& carrier, const char* why) {
    std::string error;
    if (!moveThread(carrier.tid, -1, &error) && proc_.threadAlive(carrier.tid)) {
        counters_.backendErrors++;
        logf(LogLevel::kWarn, "%s: cannot move thread %d off core %d: %s", why, carrier.tid,
             carrier.core, error.c_str());
    }
}

// A release that completed (or a carrier that left) needs no timer: dropping it saves a wake-up.
// The generation check in onTimer remains the guard for anything that slips through.
void Arbiter::cancelDeadline(Carrier& carrier) {
    if (carrier.deadline) releaseDeadlines_.erase(*carrier.deadline);
    carrier.deadline.reset();
}

// Every move of a carrier thread goes through here (core -1: the unmanaged set), so the metrics
// see what each one costs the loop: on a cgroup backend it is a kernel cgroup migration, the one
// system call a grant cannot defer.
bool Arbiter::moveThread(pid_t tid, int core, std::string* error) {
    const Clock::time_point start = Clock::now();
    const bool ok =
        core < 0 ? backend_.moveToUnmanaged(tid, error) : backend_.moveToCore(tid, core, error);
    const double took = seconds(Clock::now() - start);
    counters_.threadMoveLatency.observe(took);
    counters_.recentThreadMoveLatency.observe(took);
    return ok;
}

// The core has no holder; the unmanaged set is updated in flush().
void Arbiter::freeCore(int core) {
    cores_[core].owner = 0;
    backendGranted_.erase(core);
    grantedDirty_ = true;
}

// Takes the carrier's core back (if any) and forgets it.
void Arbiter::removeCarrier(uint64_t id, bool closeConn) {
    Carrier* c = carrierOf(id);
    if (!c) return;
    Process* p = processOf(c->session);
    cancelDeadline(*c);
    if (c->state == CarrierState::kGranted || c->state == CarrierState::kReleasing) {
        unmanage(*c, "carrier gone");
        freeCore(c->core);
        counters_.disconnectReclaims++;
    }
    if (c->core >= 0 && p) p->page->set(c->core, false);
    if (p) p->carriers.erase(id);
    if (closeConn) {
        conns_.erase(c->conn);
        transport_.close(c->conn);
    }
    carriers_.erase(id);
}

// Ends a session: all carriers go, the page is unmapped (the memfd dies with the last mapping).
void Arbiter::removeProcess(uint64_t session, bool closeConn) {
    Process* p = processOf(session);
    if (!p) return;
    logf(LogLevel::kInfo, "process %d (%s) left", p->peer.pid, p->command.c_str());
    for (uint64_t id : std::set<uint64_t>(p->carriers)) removeCarrier(id, true);
    if (closeConn) {
        conns_.erase(p->conn);
        transport_.close(p->conn);
    }
    processes_.erase(session);
}

// Lookups by id: connections and timers hold ids, never pointers.
Arbiter::Carrier* Arbiter::carrierOf(uint64_t id) {
    auto it = carriers_.find(id);
    return it == carriers_.end() ? nullptr : it->second.get();
}

// See carrierOf.
Arbiter::Process* Arbiter::processOf(uint64_t session) {
    auto it = processes_.find(session);
    return it == processes_.end() ? nullptr : it->second.get();
}

// Random salt mixed with a counter: unique and not guessable by other processes.
uint64_t Arbiter::newSessionId() {
    uint64_t id = (sessionSalt_ ^ (++sessionCounter_ * 0x9e3779b97f4a7c15ull));
    return id == 0 ? 1 : id;
}

// SIGHUP reload: applies to the next request of each process.
void Arbiter::setLimits(std::optional<arbpolicy::LimitsConfig> limits) {
    cfg_.limits = std::move(limits);
}

// Recomputes the allocation and applies the difference: releases are asked for first (they take
// time), then every core that is free and due to a process with a waiting carrier is granted.
// Odd-core turn stamps go round through the processes; a rotating call is the only one that takes
// an odd core from a process whose request did not change (see arbpolicy::OddCoreTurns).
void Arbiter::rebalance(Clock::time_point now, bool rotate) {
    std::vector<arbpolicy::ProcessRequest> requests;
    arbpolicy::Grants current;
    arbpolicy::OddCoreTurns turns;
    turns.rotate = rotate;
    for (auto& [session, p] : processes_) {
        if (!p->hasRequest) continue;
        arbpolicy::ProcessRequest r;
        r.key = session;
        r.requested = p->request.perPriority;
        r.maxCores =
            std::min<uint32_t>(p->request.maxCores, static_cast<uint32_t>(p->carriers.size()));
        r.minCores = std::min(p->request.minCores, r.maxCores);
        requests.push_back(r);
        turns.stamps[session] = p->oddCoreTurns;
        for (uint64_t id : p->carriers) {
            Carrier* c = carrierOf(id);
            if (c->state == CarrierState::kGranted) current[session].push_back(c->core);
        }
    }
    arbpolicy::Allocation allocation =
        arbpolicy::allocateDetailed(cfg_.managed, requests, current, turns);
    const arbpolicy::Grants& desired = allocation.grants;
    std::set<int> assigned;
    bool anyWaiting = false;
    for (auto& [session, p] : processes_) {
        // A re-registered process holds adopted cores before it resends its request: leave it be.
        if (!p->hasRequest) continue;
        const arbpolicy::ProcessShare& share = allocation.shares[session];
        if (rotate && share.holdsSharedOddCore && p->waitsForOddCore) {
            counters_.oddCoreRotations++;
            logf(LogLevel::kDebug, "odd core handed on to pid %d (share period)", p->peer.pid);
        }
        p->oddCoreTurns = share.oddCoreTurns;
        p->waitsForOddCore = share.waitsForOddCore;
        anyWaiting |= share.waitsForOddCore;
        std::set<int> want;
        auto d = desired.find(session);
        if (d != desired.end()) {
            for (int core : d->second) {
                if (!isManaged(core) || !assigned.insert(core).second) {
                    logf(LogLevel::kError, "allocation gave core %d twice or unmanaged; ignored",
                         core);
                    continue;
                }
                want.insert(core);
            }
        }
        for (uint64_t id : std::set<uint64_t>(p->carriers)) {
            Carrier* c = carrierOf(id);
            if (c->state == CarrierState::kGranted && !want.count(c->core)) revoke(*p, *c, now);
        }
        for (auto it = p->dueSince.begin(); it != p->dueSince.end();)
            it = want.count(it->first) ? std::next(it) : p->dueSince.erase(it);
        for (int core : want) {
            const CoreSlot& slot = cores_[core];
            bool mine = slot.owner && carrierOf(slot.owner)->session == session;
            if (mine) continue;
            p->dueSince.emplace(core, now);
            if (slot.owner || slot.orphanTid || p->page->isSet(core)) continue;
            grant(*p, core, now);
        }
    }
    armSharePeriod(anyWaiting, now);
}

// The share period runs only while some process waits for an odd core that an equal claimant
// holds: no timer work otherwise. An armed period is kept (not pushed back) by ordinary
// re-allocations, so a busy arbiter still rotates.
void Arbiter::armSharePeriod(bool anyWaiting, Clock::time_point now) {
    if (cfg_.sharePeriod <= Clock::duration::zero() || !anyWaiting) {
        shareDeadline_.reset();
    } else if (!shareDeadline_) {
        shareDeadline_ = now + cfg_.sharePeriod;
    }
}

// Moves a waiting carrier onto the core first, then tells it: it returns already on its core.
// A carrier that cannot be moved is dropped (its connection closed) and the next one is tried.
bool Arbiter::grant(Process& p, int core, Clock::time_point now) {
    for (;;) {
        Carrier* c = nullptr;
        for (uint64_t id : p.carriers) {
            Carrier* k = carrierOf(id);
            if (k->state == CarrierState::kWaiting) {
                c = k;
                break;
            }
        }
        if (!c) return false;
        std::string error;
        if (!moveThread(c->tid, core, &error)) {
            counters_.backendErrors++;
            logf(LogLevel::kWarn, "cannot move thread %d to core %d: %s; dropping the carrier",
                 c->tid, core, error.c_str());
            removeCarrier(c->id, true);
            continue;
        }
        cores_[core].owner = c->id;
        c->state = CarrierState::kGranted;
        c->core = core;
        c->generation = nextGeneration_++;
        transport_.send(c->conn, arbproto::Granted{core, c->generation});
        backendGranted_.insert(core);
        grantedDirty_ = true;
        counters_.grants++;
        auto due = p.dueSince.find(core);
        if (due != p.dueSince.end()) {
            counters_.grantLatency.observe(seconds(now - due->second));
            p.dueSince.erase(due);
        }
        return true;
    }
}

// Asks for the core through the page and arms the forced-reclaim deadline for this generation.
void Arbiter::revoke(Process& p, Carrier& carrier, Clock::time_point now) {
    carrier.state = CarrierState::kReleasing;
    carrier.releaseAskedAt = now;
    p.page->set(carrier.core, true);
    carrier.deadline = releaseDeadlines_.emplace(now + cfg_.releaseTimeout,
                                                 Deadline{carrier.id, carrier.generation});
    logf(LogLevel::kDebug, "asked pid %d to release core %d", p.peer.pid, carrier.core);
}

// Release deadlines carry the grant generation, so a deadline of an earlier grant never touches a
// later one of the same carrier. The end of a share period re-allocates with rotation.
void Arbiter::onTimer(Clock::time_point now) {
    bool changed = false;
    while (!releaseDeadlines_.empty() && releaseDeadlines_.begin()->first <= now) {
        auto due = releaseDeadlines_.begin();
        Deadline d = due->second;
        Carrier* c = carrierOf(d.carrier);
        if (c && c->deadline == due) c->deadline.reset();  // never keep an erased iterator
        releaseDeadlines_.erase(due);
        if (!c || c->state != CarrierState::kReleasing || c->generation != d.generation) continue;
        Process* p = processOf(c->session);
        logf(LogLevel::kInfo, "pid %d did not release core %d in time; moving thread %d off it",
             p->peer.pid, c->core, c->tid);
        unmanage(*c, "forced reclaim");
        freeCore(c->core);
        c->state = CarrierState::kForcedOut;
        counters_.forcedReclaims++;
        changed = true;
    }
    if (orphanDeadline_ && *orphanDeadline_ <= now) {
        expireOrphans();
        changed = true;
    }
    bool rotate = shareDeadline_ && *shareDeadline_ <= now;
    if (rotate) shareDeadline_.reset();  // re-armed from now by the rotation's own rebalance
    if (changed || rotate) rebalance(now, rotate);
}

// Re-adoption window over: threads nobody claimed leave their cores.
void Arbiter::expireOrphans() {
    orphanDeadline_.reset();
    for (auto& [core, slot] : cores_) {
        if (!slot.orphanTid) continue;
        std::string ignored;
        moveThread(slot.orphanTid, -1, &ignored);
        logf(LogLevel::kInfo, "thread %d on core %d was not re-adopted; moved off", slot.orphanTid,
             core);
        slot.orphanTid = 0;
        freeCore(core);
    }
}

// See the header: deferred moves, one unmanaged-set update per batch, backend bookkeeping. A
// hand-over (a core released and granted again before the flush) leaves the granted set as it
// was written: no write then (on cgroup v2 each costs ~30 us of the arbiter's loop).
void Arbiter::flush() {
    for (uint64_t id : toUnmanage_) {
        Carrier* c = carrierOf(id);
        if (c && (c->state == CarrierState::kIdle || c->state == CarrierState::kWaiting))
            unmanage(*c, "released");
    }
    toUnmanage_.clear();
    if (grantedDirty_ && writtenGranted_ != backendGranted_) {
        std::string error;
        if (backend_.setGrantedCores(backendGranted_, &error)) {
            writtenGranted_ = backendGranted_;
        } else {
            counters_.backendErrors++;
            logf(LogLevel::kWarn, "cannot update the unmanaged set: %s", error.c_str());
        }
    }
    grantedDirty_ = false;
    backend_.flush();
}

// Earliest of the release deadlines, the re-adoption deadline and the share period, for the
// server's timer.
std::optional<Clock::time_point> Arbiter::nextDeadline() const {
    std::optional<Clock::time_point> next = orphanDeadline_;
    if (shareDeadline_ && (!next || *shareDeadline_ < *next)) next = shareDeadline_;
    if (!releaseDeadlines_.empty() && (!next || releaseDeadlines_.begin()->first < *next))
        next = releaseDeadlines_.begin()->first;
    return next;
}

// Release deadlines are asked-at + releaseTimeout, so the last live one belongs to the latest
// release still awaited. An entry of an earlier grant (a generation that no longer matches) is
// skipped; it is erased when it falls due.
std::optional<Clock::time_point> Arbiter::releasePollUntil() const {
    if (cfg_.releasePoll <= std::chrono::nanoseconds::zero()) return std::nullopt;
    for (auto it = releaseDeadlines_.rbegin(); it != releaseDeadlines_.rend(); ++it) {
        auto c = carriers_.find(it->second.carrier);
        if (c == carriers_.end() || c->second->state != CarrierState::kReleasing ||
            c->second->generation != it->second.generation)
            continue;
        return c->second->releaseAskedAt + cfg_.releasePoll;
    }
    return std::nullopt;
}

// Snapshot for arbctl: granted cores include ones being released; pending releases include forced
// ones not yet acknowledged.
arbproto::StatusReply Arbiter::status() const {
    arbproto::StatusReply s;
    s.epoch = cfg_.epoch;
    for (const auto& [core, slot] : cores_) s.managed.push_back(core);
    for (const auto& [session, p] : processes_) {
        arbproto::ProcessStatus ps;
        ps.pid = p->peer.pid;
        ps.uid = p->peer.uid;
        ps.command = p->command;
        if (p->hasRequest) {
            ps.requested = p->request.perPriority;
            ps.minCores = p->request.minCores;
            ps.maxCores = p->request.maxCores;
        }
        ps.carriers = static_cast<uint32_t>(p->carriers.size());
        for (uint64_t id : p->carriers) {
            const Carrier& c = *carriers_.at(id);
            if (c.state == CarrierState::kGranted || c.state == CarrierState::kReleasing)
                ps.granted.push_back(c.core);
            if (c.state == CarrierState::kReleasing || c.state == CarrierState::kForcedOut)
                ps.pendingReleases.push_back(c.core);
        }
        std::sort(ps.granted.begin(), ps.granted.end());
        std::sort(ps.pendingReleases.begin(), ps.pendingReleases.end());
        s.processes.push_back(std::move(ps));
    }
    return s;
}

// Gauges are computed from the state on demand, counters are kept as events happen.
std::string Arbiter::metricsText() const {
    Gauges g;
    g.processes = processes_.size();
    g.carriers = carriers_.size();
    g.managedCores = cores_.size();
    for (const auto& [session, p] : processes_)
        if (p->hasRequest)
            for (size_t i = 0; i < g.demand.size(); i++) g.demand[i] += p->request.perPriority[i];
    for (const auto& [core, slot] : cores_) g.grantedCores += slot.owner != 0;
    for (const auto& [id, c] : carriers_)
        g.pendingReleases +=
            c->state == CarrierState::kReleasing || c->state == CarrierState::kForcedOut;
    return renderMetrics(counters_, g);
}

}  // namespace arbd
