// The readers-writer lock word (sync_words.h) and arbrt::RwLock over it.
#include "arbrt/sync.h"

namespace arbrt {
namespace words {
namespace {

constexpr uint32_t kMaxReaders = ~0u / kOneReader;

uint32_t readers(uint32_t s) {
    return s / kOneReader;
}

// A new reader waits while a writer holds the lock, and with writer preference also while a
// writer waits (that is what makes recursive read locks deadlock there, as documented).
bool readerBlocked(uint32_t s, bool preferWriters) {
    return (s & kWriteLocked) || (preferWriters && (s & kWritersWaiting));
}

bool writerBlocked(uint32_t s) {
    return (s & kWriteLocked) || readers(s) != 0;
}

// Called by the thread that made the lock free (or withdrew a writer), after it cleared
// kWritersWaiting (`writersWaited`: the bit was set). One writer gets the lock next if there is
// one; readers are all woken unless the lock prefers writers and a writer was woken (they keep
// their bit then, and that writer's unlock wakes them). The fetch_and on kReadersWaiting makes
// exactly one releaser wake the readers for each time they set it.
void wakeAfterRelease(const RwWords& rw, bool writersWaited) {
    const bool wokeWriter = writersWaited && unpark(rw.writersQueue, 1) > 0;
    if (wokeWriter && rw.preferWriters) return;
    if ((rw.state.load(std::memory_order_relaxed) & kReadersWaiting) &&
        (rw.state.fetch_and(~kReadersWaiting, std::memory_order_relaxed) & kReadersWaiting)) {
        unpark(rw.readersQueue, ~size_t{0});
    }
}

// One attempt to take the write lock; `extraBits` is kWritersWaiting for a writer that parked.
// Acquire: pairs with the unlocks' release.
bool tryWrite(const RwWords& rw, uint32_t extraBits) {
    uint32_t s = rw.state.load(std::memory_order_relaxed);
    while (!writerBlocked(s)) {
        if (rw.state.compare_exchange_weak(s, s | kWriteLocked | extraBits,
                                           std::memory_order_acquire, std::memory_order_relaxed)) {
            return true;
        }
    }
    return false;
}

// Sets `bit` while `blocked(state)` holds; false if the lock became available meanwhile. Relaxed:
// the bit is re-read under the bucket lock (park's validate), which orders it against the
// releaser's unpark.
template <typename Blocked>
bool announceWaiter(std::atomic<uint32_t>& word, uint32_t bit, Blocked blocked) {
    uint32_t s = word.load(std::memory_order_relaxed);
    for (;;) {
        if (!blocked(s)) return false;
        if (s & bit) return true;
        if (word.compare_exchange_weak(s, s | bit, std::memory_order_relaxed)) return true;
    }
}

// A writer gives up (time-out, or interrupted for good): if the writers-waiting bit is set, clear
// it and wake as a release would, so readers it held back (writer preference) may enter and
// another parked writer re-announces itself. Without this, those readers would wait until the
// current holders release, long after the writer left.
void withdrawWriter(const RwWords& rw) {
    if ((rw.state.load(std::memory_order_relaxed) & kWritersWaiting) &&
        (rw.state.fetch_and(~kWritersWaiting, std::memory_order_relaxed) & kWritersWaiting)) {
        wakeAfterRelease(rw, true);
    }
}

}  // namespace

WaitStatus rwTryRead(const RwWords& rw) {
    uint32_t s = rw.state.load(std::memory_order_relaxed);
    for (;;) {
        if (readerBlocked(s, rw.preferWriters)) return WaitStatus::busy;
        if (readers(s) == kMaxReaders) return WaitStatus::overflow;
        // Acquire: pairs with the write unlock's release.
        if (rw.state.compare_exchange_weak(s, s + kOneReader, std::memory_order_acquire,
                                           std::memory_order_relaxed)) {
            return WaitStatus::ok;
        }
    }
}

WaitStatus rwTryWrite(const RwWords& rw) {
    return tryWrite(rw, 0) ? WaitStatus::ok : WaitStatus::busy;
}

// Spins (looks only), then announces itself with kReadersWaiting and parks on the readers' queue.
// A reader that times out or is interrupted may leave the bit set: the next release clears it
// (one spurious unpark).
WaitStatus rwReadLock(const RwWords& rw, uint64_t deadlineNs, const WaitHooks* hooks) {
    WaitStatus r = rwTryRead(rw);
    if (r != WaitStatus::busy) return r;
    auto blocked = [&](uint32_t s) { return readerBlocked(s, rw.preferWriters); };
    internal::spinBriefly([&] { return !blocked(rw.state.load(std::memory_order_relaxed)); });
    for (;;) {
        r = rwTryRead(rw);
        if (r != WaitStatus::busy) return r;
        if (!announceWaiter(rw.state, kReadersWaiting, blocked)) continue;
        const ParkResult p = internal::parkWith(
            rw.readersQueue,
            [&] {
                const uint32_t s = rw.state.load(std::memory_order_relaxed);
                return (s & kReadersWaiting) && blocked(s);
            },
            deadlineNs, hooks);
        if (p == ParkResult::timedOut) return WaitStatus::timedOut;
        if (p == ParkResult::interrupted && hooks->act()) return WaitStatus::interrupted;
    }
}

// As rwReadLock on the writers' queue. Once parked, a writer acquires with kWritersWaiting kept
// set (it cannot know whether other writers still wait), so its unlock wakes the next one.
WaitStatus rwWriteLock(const RwWords& rw, uint64_t deadlineNs, const WaitHooks* hooks) {
    if (tryWrite(rw, 0)) return WaitStatus::ok;
    internal::spinBriefly([&] { return !writerBlocked(rw.state.load(std::memory_order_relaxed)); });
    uint32_t extraBits = 0;
    for (;;) {
        if (tryWrite(rw, extraBits)) return WaitStatus::ok;
        if (!announceWaiter(rw.state, kWritersWaiting, writerBlocked)) continue;
        extraBits = kWritersWaiting;
        const ParkResult p = internal::parkWith(
            rw.writersQueue,
            [&] {
                const uint32_t s = rw.state.load(std::memory_order_relaxed);
                return (s & kWritersWaiting) && writerBlocked(s);
            },
            deadlineNs, hooks);
        if (p == ParkResult::timedOut) {
            // Last chance, as POSIX has no time-out for a lock that is free.
            if (tryWrite(rw, extraBits)) return WaitStatus::ok;
            withdrawWriter(rw);
            return WaitStatus::timedOut;
        }
        if (p == ParkResult::interrupted && hooks->act()) {
            withdrawWriter(rw);
            return WaitStatus::interrupted;
        }
    }
}

// Release: the write critical section happens before the next acquire.
void rwWriteUnlock(const RwWords& rw) {
    const uint32_t old =
        rw.state.fetch_and(~(kWriteLocked | kWritersWaiting), std::memory_order_release);
    if (old & (kWritersWaiting | kReadersWaiting)) wakeAfterRelease(rw, old & kWritersWaiting);
}

// The last reader out hands the lock to a waiting writer. A reader that arrives meanwhile (reader
// preference) or a writer that takes the free lock first becomes responsible instead.
void rwReadUnlock(const RwWords& rw) {
    const uint32_t old = rw.state.fetch_sub(kOneReader, std::memory_order_release);
    if (readers(old) != 1 || !(old & kWritersWaiting)) return;
    uint32_t s = rw.state.load(std::memory_order_relaxed);
    while (!writerBlocked(s) && (s & kWritersWaiting)) {
        if (rw.state.compare_exchange_weak(s, s & ~kWritersWaiting, std::memory_order_relaxed)) {
            wakeAfterRelease(rw, true);
            return;
        }
    }
}

}  // namespace words

void RwLock::lockShared() {
    words::rwReadLock(words(), kNoDeadline, nullptr);
}
bool RwLock::tryLockShared() {
    return words::rwTryRead(words()) == words::WaitStatus::ok;
}
bool RwLock::lockSharedUntil(uint64_t deadlineNs) {
    return words::rwReadLock(words(), deadlineNs, nullptr) == words::WaitStatus::ok;
}
void RwLock::unlockShared() {
    words::rwReadUnlock(words());
}
void RwLock::lock() {
    words::rwWriteLock(words(), kNoDeadline, nullptr);
}
bool RwLock::tryLock() {
    return words::rwTryWrite(words()) == words::WaitStatus::ok;
}
bool RwLock::lockUntil(uint64_t deadlineNs) {
    return words::rwWriteLock(words(), deadlineNs, nullptr) == words::WaitStatus::ok;
}
void RwLock::unlock() {
    words::rwWriteUnlock(words());
}

}  // namespace arbrt
