#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include <utility>

#include "arbproto/codec.h"
#include "log.h"

namespace arbd {
namespace {

constexpr uint64_t kTagListen = 1, kTagTimer = 2, kTagSignal = 3, kTagMetrics = 4;
constexpr size_t kMaxOutput = 8u << 20;  // a client that stops reading is dropped beyond this
constexpr size_t kMaxHttpRequest = 4096;

// "what: strerror(errno)" for log lines and errors.
std::string errnoText(const std::string& what) {
    return what + ": " + strerror(errno);
}

// Registers a descriptor; the tag (a fixed id or a ConnId) is how events find their owner.
bool addFd(int epoll, int fd, uint32_t events, uint64_t tag) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = tag;
    return epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &ev) == 0;
}

// Refuses to replace a socket another arbiter still answers on; removes a dead one.
bool clearStaleSocket(const std::string& path, std::string* error) {
    struct stat st;
    if (lstat(path.c_str(), &st) != 0) return true;
    if (!S_ISSOCK(st.st_mode)) {
        *error = path + " exists and is not a socket";
        return false;
    }
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    bool alive = connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    ::close(probe);
    if (alive) {
        *error = "another core arbiter is listening on " + path;
        return false;
    }
    unlink(path.c_str());
    return true;
}

}  // namespace

Server::Server(ServerConfig config) : cfg_(std::move(config)) {}

// Closing removes the socket file: no leftovers after a clean exit.
Server::~Server() {
    close();
}

bool Server::open(std::string* error) {
    sockaddr_un addr{};
    if (cfg_.socketPath.empty() || cfg_.socketPath.size() >= sizeof(addr.sun_path)) {
        *error = "socket path empty or too long: " + cfg_.socketPath;
        return false;
    }
    if (!clearStaleSocket(cfg_.socketPath, error)) return false;
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    listen_ = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    timer_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGHUP);
    signal_ = signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);
    if (epoll_ < 0 || listen_ < 0 || timer_ < 0 || signal_ < 0) {
        *error = errnoText("cannot create event loop descriptors");
        return false;
    }
    // Everything else is ready before the socket accepts: whoever can connect can use all of it.
    if (!cfg_.metricsAddr.empty() && !openMetricsListener(error)) return false;
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, cfg_.socketPath.c_str(), cfg_.socketPath.size() + 1);
    // Owner and group may connect, nobody else may (mode 0660 from the start: no window).
    mode_t old = umask(0117);
    int bound = bind(listen_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    umask(old);
    if (bound != 0) {
        *error = errnoText("bind " + cfg_.socketPath);
        return false;
    }
    socketBound_ = true;
    if (cfg_.socketGroup >= 0 && chown(cfg_.socketPath.c_str(), static_cast<uid_t>(-1),
                                       static_cast<gid_t>(cfg_.socketGroup)) != 0) {
        *error = errnoText("chown " + cfg_.socketPath);
        return false;
    }
    if (listen(listen_, 256) != 0) {
        *error = errnoText("listen");
        return false;
    }
    if (!addFd(epoll_, listen_, EPOLLIN, kTagListen) ||
        !addFd(epoll_, timer_, EPOLLIN, kTagTimer) ||
        !addFd(epoll_, signal_, EPOLLIN, kTagSignal)) {
        *error = errnoText("epoll_ctl");
        return false;
    }
    nextMetricsWrite_ = Clock::now();
    return true;
}

// Loopback-only HTTP endpoint (options.cc refuses other addresses).
bool Server::openMetricsListener(std::string* error) {
    auto colon = cfg_.metricsAddr.rfind(':');
    std::string host = cfg_.metricsAddr.substr(0, colon);
    std::string port = cfg_.metricsAddr.substr(colon + 1);
    if (host.size() > 1 && host.front() == '[') host = host.substr(1, host.size() - 2);
    addrinfo hints{}, *res = nullptr;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    if (getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0 || !res) {
        *error = "cannot resolve metrics address " + cfg_.metricsAddr;
        return false;
    }
    metricsListen_ = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(metricsListen_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    bool ok = metricsListen_ >= 0 && bind(metricsListen_, res->ai_addr, res->ai_addrlen) == 0 &&
              listen(metricsListen_, 16) == 0 &&
              addFd(epoll_, metricsListen_, EPOLLIN, kTagMetrics);
    freeaddrinfo(res);
    if (!ok) *error = errnoText("metrics endpoint " + cfg_.metricsAddr);
    return ok;
}

// Idempotent: closes every descriptor and removes the socket and metrics files.
void Server::close() {
    for (auto& [id, c] : conns_) ::close(c.fd);
    conns_.clear();
    for (int* fd : {&epoll_, &listen_, &timer_, &signal_, &metricsListen_}) {
        if (*fd >= 0) ::close(*fd);
        *fd = -1;
    }
    if (socketBound_) unlink(cfg_.socketPath.c_str());
    socketBound_ = false;
    if (!cfg_.metricsPath.empty()) unlink(cfg_.metricsPath.c_str());
}

// The loop: events, then dropped connections, then (when idle) the arbiter's deferred work.
bool Server::run() {
    epoll_event events[64];
    // The arbiter's deferred work (bookkeeping after replies) runs when no event is waiting, so it
    // never delays the next message (e.g. the release acknowledgement a grant is waiting for); at
    // least every kMaxDeferredBatches batches under constant load.
    constexpr int kMaxDeferredBatches = 16;
    int deferredBatches = 0;
    while (!stop_) {
        armTimer();
        // While a release is awaited (Arbiter::releasePollUntil), look without sleeping: a sleeping
        // arbiter reads RELEASE_DONE only after a cross-CPU wake-up of its idle CPU.
        const auto pollUntil = arbiter_->releasePollUntil();
        const bool polling = pollUntil && Clock::now() < *pollUntil;
        int n = epoll_wait(epoll_, events, 64, deferredBatches || polling ? 0 : -1);
        if ((n == 0 && deferredBatches) || deferredBatches >= kMaxDeferredBatches) {
            arbiter_->flush();
            deferredBatches = 0;
            if (n == 0) continue;
        }
        if (n == 0) {
            // Polling: the releasing process's own threads (its release watcher) may need this
            // CPU to answer at all; yield it between looks instead of holding it for a time slice.
            sched_yield();
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            logf(LogLevel::kError, "%s", errnoText("epoll_wait").c_str());
            return false;
        }
        for (int i = 0; i < n; i++) {
            uint64_t tag = events[i].data.u64;
            if (tag == kTagListen) {
                accept(listen_, Kind::kClient);
            } else if (tag == kTagMetrics) {
                accept(metricsListen_, Kind::kHttp);
            } else if (tag == kTagSignal) {
                if (!handleSignal()) stop_ = true;
            } else if (tag == kTagTimer) {
                uint64_t expirations;
                if (read(timer_, &expirations, sizeof(expirations)) < 0) {
                    // EAGAIN: a spurious wake-up; deadlines are rechecked below anyway.
                }
                armedDeadline_.reset();  // fired: disarmed
                arbiter_->onTimer(Clock::now());
            } else {
                if (events[i].events & EPOLLOUT) writable(tag);
                if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP)) readable(tag);
            }
        }
        // Connections that failed while the arbiter was sending to them are reported only now, so
        // the arbiter is never re-entered from inside one of its own calls.
        for (ConnId id : std::exchange(broken_, {})) drop(id, true, "send failed");
        deferredBatches++;
        if (!cfg_.metricsPath.empty() && Clock::now() >= nextMetricsWrite_) writeMetricsFile();
    }
    return true;
}

// Returns false when the loop should stop.
bool Server::handleSignal() {
    signalfd_siginfo info;
    bool keepGoing = true;
    while (read(signal_, &info, sizeof(info)) == sizeof(info)) {
        if (info.ssi_signo == SIGHUP) {
            if (reload_) reload_();
        } else {
            logf(LogLevel::kInfo, "signal %u: shutting down", info.ssi_signo);
            keepGoing = false;
        }
    }
    return keepGoing;
}

// One timerfd serves every deadline (release timeouts, re-adoption, metrics file).
void Server::armTimer() {
    auto next = arbiter_->nextDeadline();
    if (!cfg_.metricsPath.empty() && (!next || nextMetricsWrite_ < *next)) next = nextMetricsWrite_;
    if (next == armedDeadline_) return;  // one syscall less per loop on the grant path
    armedDeadline_ = next;
    itimerspec spec{};
    if (next) {
        auto ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(next->time_since_epoch()).count();
        if (ns <= 0) ns = 1;
        spec.it_value.tv_sec = ns / 1000000000;
        spec.it_value.tv_nsec = ns % 1000000000;
    }
    // steady_clock is CLOCK_MONOTONIC on Linux, so its time points are valid absolute deadlines.
    timerfd_settime(timer_, TFD_TIMER_ABSTIME, &spec, nullptr);
}

// Rewrites the metrics file (periodic; path mode of --metrics).
void Server::writeMetricsFile() {
    nextMetricsWrite_ = Clock::now() + cfg_.metricsPeriod;
    std::string tmp = cfg_.metricsPath + ".tmp";
    std::string text = arbiter_->metricsText();
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    bool ok = fd >= 0 && write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    if (fd >= 0) ::close(fd);
    // rename: readers see the old or the new file, never a half-written one.
    if (!ok || rename(tmp.c_str(), cfg_.metricsPath.c_str()) != 0)
        logf(LogLevel::kWarn, "%s",
             errnoText("cannot write metrics to " + cfg_.metricsPath).c_str());
}

// Accepts everything pending (level-triggered epoll); client peers are identified by SO_PEERCRED
// here, once, before any byte is read.
void Server::accept(int listenFd, Kind kind) {
    for (;;) {
        int fd = accept4(listenFd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EINTR)
                logf(LogLevel::kWarn, "%s", errnoText("accept").c_str());
            return;
        }
        ConnId id = nextId_++;
        if (!addFd(epoll_, fd, EPOLLIN | EPOLLRDHUP, id)) {
            ::close(fd);
            continue;
        }
        conns_[id] = Conn{fd, kind, {}, {}, false};
        if (kind == Kind::kHttp) continue;
        ucred cred{};
        socklen_t len = sizeof(cred);
        getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len);
        arbiter_->onConnect(id, Peer{cred.pid, cred.uid, cred.gid});
    }
}

// Reads once, then hands every complete frame to the arbiter. Malformed input ends only this
// connection. The buffer holds at most one partial frame (<= 72 bytes) between reads.
void Server::readable(ConnId id) {
    auto it = conns_.find(id);
    if (it == conns_.end()) return;
    Conn& c = it->second;
    uint8_t buf[4096];
    ssize_t n = recv(c.fd, buf, sizeof(buf), 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) {
        drop(id, true, n == 0 ? "closed by peer" : strerror(errno));
        return;
    }
    c.in.insert(c.in.end(), buf, buf + n);
    if (c.kind == Kind::kHttp) {
        handleHttp(id, c);
        return;
    }
    size_t offset = 0;
    for (;;) {
        arbproto::ClientMessage message;
        size_t consumed = 0;
        std::string why;
        auto bytes = std::span<const uint8_t>(c.in).subspan(offset);
        auto status = arbproto::decodeClientMessage(bytes, &message, &consumed, &why);
        if (status == arbproto::DecodeStatus::kIncomplete) break;
        if (status == arbproto::DecodeStatus::kMalformed) {
            arbiter_->onProtocolError(id, why, Clock::now());
            return;  // the arbiter closed it through close(id)
        }
        offset += consumed;
        arbiter_->onMessage(id, message, Clock::now());
        it = conns_.find(id);
        if (it == conns_.end()) return;  // closed while handling
    }
    Conn& still = it->second;
    still.in.erase(still.in.begin(), still.in.begin() + static_cast<ptrdiff_t>(offset));
}

// Answers any request with the metrics once the header is complete; then closes.
void Server::handleHttp(ConnId id, Conn& c) {
    std::string request(c.in.begin(), c.in.end());
    if (request.find("\r\n\r\n") == std::string::npos) {
        if (c.in.size() > kMaxHttpRequest) drop(id, false, "oversized HTTP request");
        return;
    }
    std::string body = arbiter_->metricsText();
    std::string response =
        "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
        "Content-Length: " +
        std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    c.out.insert(c.out.end(), response.begin(), response.end());
    c.closeAfterWrite = true;
    flushOut(id, c);
}

// Transport::send: encodes and writes now when possible, else queues (bounded by kMaxOutput).
// Never re-enters the arbiter: failures are reported after the current event (broken_).
void Server::send(ConnId id, const arbproto::ServerMessage& message, int passFd) {
    auto it = conns_.find(id);
    if (it == conns_.end()) {
        if (passFd >= 0) ::close(passFd);
        return;
    }
    Conn& c = it->second;
    std::vector<uint8_t> bytes;
    arbproto::encode(message, &bytes);
    if (passFd >= 0) {
        // The descriptor travels with the frame's first byte; only a fresh connection gets one, so
        // the output buffer is empty and the whole frame fits the socket buffer.
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
        iovec iov{bytes.data(), bytes.size()};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof(control);
        cmsghdr* cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &passFd, sizeof(int));
        ssize_t n = c.out.empty() ? sendmsg(c.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) : -1;
        ::close(passFd);
        if (n != static_cast<ssize_t>(bytes.size())) broken_.push_back(id);
        return;
    }
    c.out.insert(c.out.end(), bytes.begin(), bytes.end());
    if (c.out.size() > kMaxOutput) {
        c.out.clear();
        broken_.push_back(id);
        return;
    }
    flushOut(id, c);
}

// Writes what the socket takes; the rest waits for EPOLLOUT. Returns false if the conn was dropped.
bool Server::flushOut(ConnId id, Conn& c) {
    while (!c.out.empty()) {
        ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) break;
        if (n < 0) {
            // The peer is gone; the read side reports it (EPOLLHUP) and the arbiter hears of it
            // then.
            c.out.clear();
            break;
        }
        c.out.erase(c.out.begin(), c.out.begin() + n);
    }
    bool wantWrite = !c.out.empty();
    if (wantWrite != c.writeInterest) {
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLRDHUP | (wantWrite ? static_cast<uint32_t>(EPOLLOUT) : 0u);
        ev.data.u64 = id;
        epoll_ctl(epoll_, EPOLL_CTL_MOD, c.fd, &ev);
        c.writeInterest = wantWrite;
    }
    if (c.out.empty() && c.closeAfterWrite) {
        drop(id, false, "done");
        return false;
    }
    return true;
}

// EPOLLOUT: the socket took some queued output.
void Server::writable(ConnId id) {
    auto it = conns_.find(id);
    if (it != conns_.end()) flushOut(id, it->second);
}

// Transport::close: the arbiter is done with this connection.
void Server::close(ConnId id) {
    auto it = conns_.find(id);
    if (it == conns_.end()) return;
    // Let a final error reply go out; a client that does not read it just loses it.
    flushOut(id, it->second);
    drop(id, false, "closed by arbiter");
}

// Forgets and closes a connection; tells the arbiter only when it did not ask for it.
void Server::drop(ConnId id, bool notifyArbiter, const char* why) {
    auto it = conns_.find(id);
    if (it == conns_.end()) return;
    int fd = it->second.fd;
    bool client = it->second.kind == Kind::kClient;
    conns_.erase(it);
    epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
    logf(LogLevel::kDebug, "connection %llu: %s", static_cast<unsigned long long>(id), why);
    if (notifyArbiter && client) arbiter_->onDisconnect(id, Clock::now());
}

}  // namespace arbd
