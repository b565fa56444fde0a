// Client side of the core-arbiter protocol (arbiter/PROTOCOL.md).
//
// Threads: any thread may call setRequestedCores; each carrier kernel thread calls
// blockUntilCoreAvailable (one socket per carrier, so a grant wakes exactly that thread);
// mustReleaseCore is wait-free. A monitor thread watches the session and, when the arbiter
// restarts, reconnects, re-registers carriers that hold cores (they keep running meanwhile) and
// resends the last request.
//
// The library calls libc directly (socket, sendmsg, recvmsg, poll, mmap, pthread mutexes and
// condition variables). Under LD_PRELOAD interposition these calls must reach the real libc, as the
// preload layer does for carrier threads.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "arbclient/core_provider.h"
#include "arbproto/io.h"
#include "arbproto/shared_page.h"

namespace arbclient {

struct ClientOptions {
    // Starts the monitor thread. The default uses std::thread; a runtime that interposes
    // pthread_create passes a starter that creates a real kernel thread. Returns false on failure.
    std::function<bool(std::function<void()> body, std::string* error)> startThread;
    // Reconnect back-off after the arbiter went away.
    int reconnectMinMs = 5;
    int reconnectMaxMs = 200;
};

class CoreArbiterClient final : public CoreProvider {
  public:
    static std::unique_ptr<CoreArbiterClient> connect(const std::string& socketPath,
                                                      std::string* error);
    static std::unique_ptr<CoreArbiterClient> connect(const std::string& socketPath,
                                                      const ClientOptions& options,
                                                      std::string* error);
    // Wakes blocked carriers (they return -1), stops the monitor, says goodbye.
    ~CoreArbiterClient() override;

    bool setRequestedCores(const std::array<uint32_t, kPriorityLevels>& perPriority,
                           uint32_t minCores, uint32_t maxCores, std::string* error) override;
    int blockUntilCoreAvailable() override;
    // One relaxed load from the shared page (fixed address for the client's whole life).
    bool mustReleaseCore(int coreId) const override {
        return static_cast<unsigned>(coreId) < static_cast<unsigned>(arbproto::kMaxCoreIds) &&
               page_->release[coreId].load(std::memory_order_relaxed) != 0;
    }
    void releaseCore(int coreId) override;
    bool hasReleaseWakeups() const override { return true; }
    // Sleeps on the page's releaseSeq (a futex in the shared memfd; the mapping is read-only,
    // which futex waits allow), on the caller's interrupt word and on pageSwaps_, in one
    // futex_waitv: a reconnect or a lost arbiter swaps the page under a sleeper, and wakes it
    // through pageSwaps_ so that it waits on the new page. Without futex_waitv (Linux < 5.16) it
    // waits on releaseSeq alone, at most kFallbackWaitNs at a time.
    bool waitForReleaseRequests(uint32_t* seen, const std::atomic<uint32_t>& interrupt,
                                uint32_t interruptSeen, uint64_t timeoutNs) override;

    // Makes blocked and future blockUntilCoreAvailable calls return -1 (e.g. at runtime shutdown).
    void shutdown();
    bool connected() const { return connected_.load(std::memory_order_acquire); }
    // Number of completed reconnections (tests and diagnostics).
    uint64_t reconnections() const { return reconnections_.load(std::memory_order_relaxed); }

    CoreArbiterClient(const CoreArbiterClient&) = delete;
    CoreArbiterClient& operator=(const CoreArbiterClient&) = delete;

  private:
    struct Carrier;
    CoreArbiterClient(std::string socketPath, ClientOptions options);

    bool openSession(bool reconnect, std::string* error);
    bool attachCarrier(Carrier* carrier, int claimedCore, uint64_t sessionId, uint64_t epoch,
                       std::string* error);
    Carrier* carrierForThisThread();
    bool exchangeRequest(std::string* error);
    void waitForNewSession(std::unique_lock<std::mutex>& lock, uint64_t failedEpoch);
    void monitorLoop();
    void sessionLost();
    void reconnectLoop();
    void pageSwapped();
    bool reportLockedOut(const std::string& why) const;

    const std::string socketPath_;
    const ClientOptions options_;
    // Fixed address of the release page; remapped in place (MAP_FIXED) on reconnect, so readers
    // never see a gap. Written only under mu_; read lock-free by mustReleaseCore.
    arbproto::SharedPage* page_ = nullptr;

    // ctlMu_ serialises request/reply exchanges on the session (control) socket; taken before mu_.
    std::mutex ctlMu_;
    // mu_ protects everything below plus each Carrier's fields.
    mutable std::mutex mu_;
    std::condition_variable sessionChanged_;
    int controlFd_ = -1;
    std::unique_ptr<arbproto::ServerStream> controlStream_;
    uint64_t sessionId_ = 0;
    uint64_t sessionEpoch_ = 0;  // bumped each time a session is established
    uid_t firstUid_ = 0;         // effective uid at the first connection (set once, under mu_)
    bool haveRequest_ = false;
    std::array<uint32_t, kPriorityLevels> lastPerPriority_{};
    uint32_t lastMin_ = 0, lastMax_ = 0;
    std::map<int, std::unique_ptr<Carrier>> carriers_;  // by tid
    std::map<int, Carrier*> byCore_;
    int carriersInside_ = 0;  // threads inside blockUntilCoreAvailable
    std::condition_variable carriersLeft_;
    int stopFd_ = -1;  // eventfd: wakes the monitor
    bool monitorRunning_ = false;
    std::condition_variable monitorExited_;

    // Bumped (release) each time page_ is remapped while the client runs, then woken with a
    // private FUTEX_WAKE from the thread that remapped it (the client's monitor thread); a
    // release waiter reads it (acquire) before the page's releaseSeq (waitForReleaseRequests).
    std::atomic<uint32_t> pageSwaps_{0};

    std::atomic<bool> stopping_{false};
    std::atomic<bool> connected_{false};
    std::atomic<uint64_t> reconnections_{0};
};

}  // namespace arbclient
