// A token handed back and forth between two threads with a mutex and two condition variables.
// Shared by the arbrt, std::thread and Boost.Fiber benchmarks so all three measure the same code
// (header-only and independent of arbrt, so the Boost.Fiber peer includes it too).
//
// One round trip (driverRoundTrip) = two one-way handoffs: driver -> partner -> driver. Each
// handoff is: set the predicate under the mutex, notify, and the other side returns from wait().
#pragma once

#include <cstdint>
#include <mutex>

namespace bench {

// Mutex M (lock/unlock) and condition variable CV (wait(std::unique_lock<M>&), notify_one()).
// Concurrency: `turn` and `stop` are guarded by `mutex`. turn is even while the driver holds the
// token, odd while the partner does.
template <typename M, typename CV>
struct PingPong {
    M mutex;
    CV toPartner;
    CV toDriver;
    uint64_t turn = 0;
    bool stop = false;

    // Driver side: pass the token and wait until it comes back (two one-way handoffs).
    void driverRoundTrip() {
        std::unique_lock<M> lock(mutex);
        ++turn;
        toPartner.notify_one();
        while (turn & 1) toDriver.wait(lock);
    }

    // Partner side: return the token every time it arrives, until finish().
    void partnerLoop() {
        std::unique_lock<M> lock(mutex);
        for (;;) {
            while (!(turn & 1) && !stop) toPartner.wait(lock);
            if (stop) return;
            ++turn;
            toDriver.notify_one();
        }
    }

    // Driver side: ends partnerLoop() (the caller then joins the partner).
    void finish() {
        std::unique_lock<M> lock(mutex);
        stop = true;
        toPartner.notify_one();
    }
};

}  // namespace bench
