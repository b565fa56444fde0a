// The mutex word's slow path (sync_words.h): Drepper's mutex with the parking lot in place of the
// futex. arbrt::Mutex (sync.h) and the preload's pthread mutexes, robust ones included, lock
// through it.
#include "arbrt/sync_words.h"

namespace arbrt::words {

// Spins (the shared policy), then marks the word contended and parks until it can take it. The
// exchange to kContended takes the word when it was free, and otherwise makes sure the holder's
// unlock unparks someone. A waiter that times out or is interrupted leaves the word kContended:
// the next unlock then unparks a waiter that may not exist, which costs a bucket lock only.
WaitStatus mutexLockSlow(std::atomic<uint32_t>& word, uint64_t deadlineNs, const WaitHooks* hooks) {
    WaitStatus spun = WaitStatus::busy;
    // Acquire on the CAS inside mutexTryLock: pairs with mutexUnlock's release.
    if (internal::spinBriefly([&] {
            const uint32_t w = word.load(std::memory_order_relaxed);
            if (w != kFree && w != kOwnerDied) return false;
            spun = mutexTryLock(word);
            return spun != WaitStatus::busy;
        })) {
        return spun;
    }
    for (;;) {
        // Acquire: pairs with the release in mutexUnlock when we take the word here.
        const uint32_t old = word.exchange(kContended, std::memory_order_acquire);
        if (old == kFree) return WaitStatus::ok;
        if (old == kOwnerDied) return WaitStatus::ownerDied;
        // Relaxed under the bucket lock: unpark() takes the same lock after its exchange.
        const ParkResult r = internal::parkWith(
            &word, [&] { return word.load(std::memory_order_relaxed) == kContended; }, deadlineNs,
            hooks);
        if (r == ParkResult::timedOut) return WaitStatus::timedOut;
        if (r == ParkResult::interrupted && hooks->act()) return WaitStatus::interrupted;
    }
}

}  // namespace arbrt::words
