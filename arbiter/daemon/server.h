// The daemon's single-threaded epoll loop: the listening Unix socket, client connections (framing,
// SO_PEERCRED, buffered output), a timerfd for the arbiter's deadlines and the metrics file, a
// signalfd (SIGTERM/SIGINT stop, SIGHUP reloads limits) and the optional loopback metrics endpoint.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "arbiter.h"

namespace arbd {

struct ServerConfig {
    std::string socketPath;
    int socketGroup = -1;     // gid owning the socket (mode 0660), -1: keep the arbiter's
    std::string metricsPath;  // rewritten every metricsPeriod
    std::string metricsAddr;  // host:port on loopback, served over HTTP
    std::chrono::milliseconds metricsPeriod{1000};
};

class Server final : public Transport {
  public:
    explicit Server(ServerConfig config);
    ~Server() override;
    // Binds the socket (replacing a stale one, refusing when another arbiter answers on it), opens
    // the metrics endpoint and sets up the loop. Signals must already be blocked by the caller.
    bool open(std::string* error);
    void attach(Arbiter* arbiter) { arbiter_ = arbiter; }
    // Called on SIGHUP; returns nothing, logs itself.
    void onReload(std::function<void()> reload) { reload_ = std::move(reload); }
    // Runs until SIGTERM/SIGINT (or requestStop from a handler). Returns false on a loop failure.
    bool run();
    // Removes the socket and the metrics file.
    void close();

    void send(ConnId conn, const arbproto::ServerMessage& message, int passFd) override;
    void close(ConnId conn) override;

  private:
    enum class Kind { kClient, kHttp };
    struct Conn {
        int fd = -1;
        Kind kind = Kind::kClient;
        std::vector<uint8_t> in;
        std::vector<uint8_t> out;
        bool closeAfterWrite = false;
        bool writeInterest = false;  // EPOLLOUT registered (only while output is queued)
    };

    void accept(int listenFd, Kind kind);
    void readable(ConnId id);
    void writable(ConnId id);
    void drop(ConnId id, bool notifyArbiter, const char* why);
    bool flushOut(ConnId id, Conn& c);
    void handleHttp(ConnId id, Conn& c);
    void armTimer();
    void writeMetricsFile();
    bool openMetricsListener(std::string* error);
    bool handleSignal();

    ServerConfig cfg_;
    Arbiter* arbiter_ = nullptr;
    std::function<void()> reload_;
    int epoll_ = -1, listen_ = -1, timer_ = -1, signal_ = -1, metricsListen_ = -1;
    std::map<ConnId, Conn> conns_;
    std::vector<ConnId> broken_;  // failed during a send; dropped after the current event
    ConnId nextId_ = 16;          // ids below 16 tag the fixed descriptors in epoll
    Clock::time_point nextMetricsWrite_;
    std::optional<Clock::time_point> armedDeadline_;  // what timer_ is set to (skip no-op re-arms)
    bool stop_ = false;
    bool socketBound_ = false;
};

}  // namespace arbd
