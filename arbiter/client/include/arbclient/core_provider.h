// The interface the user-thread runtime uses to get cores. CoreArbiterClient implements it against
// the core arbiter; tests of the runtime can substitute a mock.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

namespace arbclient {

constexpr int kPriorityLevels = 8;  // 0 = highest

class CoreProvider {
  public:
    virtual ~CoreProvider() = default;

    // Asks for perPriority[p] cores at priority p, with at least minCores and at most maxCores in
    // all. Returns false with `error` when the request could not be delivered.
    virtual bool setRequestedCores(const std::array<uint32_t, kPriorityLevels>& perPriority,
                                   uint32_t minCores, uint32_t maxCores, std::string* error) = 0;

    // Called by a carrier kernel thread: blocks until the arbiter grants the calling thread a core
    // (the thread has then been moved onto it) and returns its id, or -1 on shutdown/fatal error.
    virtual int blockUntilCoreAvailable() = 0;

    // True when the arbiter asks for `coreId` back. Cheap enough to call on every dispatcher pass.
    virtual bool mustReleaseCore(int coreId) const = 0;

    // The carrier on `coreId` has stopped using it; it then calls blockUntilCoreAvailable() again.
    virtual void releaseCore(int coreId) = 0;

    // Fast release: whether waitForReleaseRequests() can block until the arbiter asks for a core
    // (the default provider cannot: callers then rely on the dispatchers' polling).
    virtual bool hasReleaseWakeups() const { return false; }
    // Blocks until the arbiter has asked for a core since the caller last saw `*seen` (updated),
    // until `interrupt` no longer holds `interruptSeen`, or until timeoutNs passed (kNoTimeout:
    // never). `interrupt` is the caller's private futex word: to end the wait (e.g. to stop), it
    // changes the word, then issues FUTEX_WAKE_PRIVATE on it; the caller reads interruptSeen before
    // it checks whatever made it wait, so a change in between returns at once. True when something
    // was asked; then mustReleaseCore() says which. May return early (a spurious wake-up).
    static constexpr uint64_t kNoTimeout = ~uint64_t{0};
    virtual bool waitForReleaseRequests(uint32_t* seen, const std::atomic<uint32_t>& interrupt,
                                        uint32_t interruptSeen, uint64_t timeoutNs) {
        (void)seen;
        (void)interrupt;
        (void)interruptSeen;
        (void)timeoutNs;
        return false;
    }
};

}  // namespace arbclient
