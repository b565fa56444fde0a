// Client-side helpers for the integration tests: a carrier thread that runs a toy dispatcher loop
// (holds its core until the arbiter asks for it back), and a pipe for a forked client to report.
#pragma once

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "arbclient/client.h"

namespace arbtest {

inline pid_t gettidNow() {
    return static_cast<pid_t>(syscall(SYS_gettid));
}

// A carrier: blocks for a core, then "dispatches" (counts passes) until asked to release — or, with
// ignoreRelease, until stopped — then releases and blocks again. Stops when the client shuts down.
class CarrierThread {
  public:
    explicit CarrierThread(arbclient::CoreArbiterClient& client, bool ignoreRelease = false)
        : client_(client), ignoreRelease_(ignoreRelease), thread_([this] { run(); }) {}
    ~CarrierThread() { stop(); }
    // Idempotent: after the first call the client may already be gone.
    void stop() {
        if (!thread_.joinable()) return;
        stop_.store(true);
        client_.shutdown();
        if (thread_.joinable()) thread_.join();
    }
    int core() const { return core_.load(); }
    pid_t tid() const { return tid_.load(); }
    uint64_t passes() const { return passes_.load(); }
    int grants() const { return grants_.load(); }

  private:
    void run() {
        tid_.store(gettidNow());
        while (!stop_.load()) {
            int core = client_.blockUntilCoreAvailable();
            if (core < 0) break;
            grants_.fetch_add(1);
            core_.store(core);
            while (!stop_.load() && (ignoreRelease_ || !client_.mustReleaseCore(core))) {
                passes_.fetch_add(1, std::memory_order_relaxed);
                std::this_thread::sleep_for(std::chrono::microseconds(50));
            }
            core_.store(-1);
            client_.releaseCore(core);
        }
    }
    arbclient::CoreArbiterClient& client_;
    const bool ignoreRelease_;
    std::atomic<bool> stop_{false};
    std::atomic<int> core_{-1};
    std::atomic<pid_t> tid_{0};
    std::atomic<uint64_t> passes_{0};
    std::atomic<int> grants_{0};
    std::thread thread_;
};

// A release watcher as the runtime has one: waits for the arbiter's release requests with no
// time-out, counting the waits that saw one, until stop() changes its interrupt word and wakes it.
class ReleaseWaiter {
  public:
    explicit ReleaseWaiter(arbclient::CoreArbiterClient& client)
        : client_(client), thread_([this] { run(); }) {}
    ~ReleaseWaiter() { stop(); }
    void stop() {
        if (!thread_.joinable()) return;
        stop_.store(true);
        interrupt_.fetch_add(1);
        syscall(SYS_futex, &interrupt_, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
        thread_.join();
    }
    int asked() const { return asked_.load(); }
    int returns() const { return returns_.load(); }  // every return of the wait

  private:
    void run() {
        uint32_t seen = 0;
        for (;;) {
            const uint32_t interrupt = interrupt_.load();
            if (stop_.load()) break;
            if (client_.waitForReleaseRequests(&seen, interrupt_, interrupt,
                                               arbclient::CoreProvider::kNoTimeout)) {
                asked_.fetch_add(1);
            }
            returns_.fetch_add(1);
        }
    }
    arbclient::CoreArbiterClient& client_;
    std::atomic<bool> stop_{false};
    std::atomic<uint32_t> interrupt_{0};
    std::atomic<int> asked_{0};
    std::atomic<int> returns_{0};
    std::thread thread_;
};

// A pipe a forked child writes fixed-size records to.
class ReportPipe {
  public:
    ReportPipe() {
        if (pipe2(fds_, O_CLOEXEC) != 0) fds_[0] = fds_[1] = -1;
    }
    ~ReportPipe() {
        for (int fd : fds_)
            if (fd >= 0) close(fd);
    }
    template <typename T>
    void put(const T& value) {
        if (write(fds_[1], &value, sizeof(T)) != sizeof(T)) _exit(98);
    }
    // Reads one record (blocks until the child writes it or exits).
    template <typename T>
    bool get(T* value) {
        if (fds_[1] >= 0) {
            close(fds_[1]);
            fds_[1] = -1;
        }
        return read(fds_[0], value, sizeof(T)) == sizeof(T);
    }

  private:
    int fds_[2];
};

}  // namespace arbtest
