// The synchronisation algorithms, each written once over words the caller owns and the parking
// lot (parking_lot.h): a mutex lock word, a condition variable's sequence and waiter count, a
// readers-writer state word, a ticket barrier and a semaphore's value word. arbrt::Mutex and the
// other classes of sync.h keep these words in the object; the preload library keeps them inside
// glibc's pthread layouts (pthread_mutex_t's __lock, pthread_cond_t's __wseq, ...), so its objects
// stay valid when statically initialised, zero-filled or copied before first use.
//
// Where the two layers differ, the caller says how:
// - interruptions: a WaitHooks (null: the wait cannot be interrupted, as for the runtime's own
//   classes). The preload's waits are interruptible by signals and, at cancellation points, by
//   cancellation (preload/src/sync/wait_hooks.h);
// - deadlines: absolute, on the runtime's timeline (nowNs()), kNoDeadline for none;
// - error codes: the algorithms return a WaitStatus; the preload maps it onto errno values, the
//   C++ classes onto bool.
// Nothing here allocates or keeps state outside the words: a waiter's record lives on its own
// stack, inside the parking lot, while it is parked.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "arbrt/parking_lot.h"

namespace arbrt::words {

enum class WaitStatus : uint8_t {
    ok,           // acquired / woken / done
    busy,         // a try-operation found the object taken
    timedOut,     // the deadline passed first
    interrupted,  // WaitHooks::act() ended the wait
    ownerDied,    // mutex: acquired, but its last holder died holding it (robust mutexes)
    overflow,     // rwlock: too many readers; semaphore: the value is at its maximum
};

// How a wait reacts when its user thread is interrupted (a signal to take, a cancellation).
// Implementations are stateless or live on the waiter's stack; both functions run on the waiting
// thread.
class WaitHooks {
  public:
    // Whether the waiting thread must stop waiting for a moment. Checked while parked (see
    // parkInterruptible()): whoever makes it true wakes the thread with arbrt::signal().
    virtual bool pending() const = 0;
    // Called once the wait has left the parking lot and withdrawn what it had announced in the
    // words (so a handler that never returns leaves nothing behind). Acts on what pending()
    // reported; returns true when the wait must end with WaitStatus::interrupted, false to wait
    // again. Condition variables do not call it: their caller acts, around its mutex.
    virtual bool act() const = 0;

  protected:
    ~WaitHooks() = default;
};

namespace internal {

// park() or, with hooks, parkInterruptible() checking hooks->pending().
inline ParkResult parkWith(const void* address, FunctionRef<bool()> validate, uint64_t deadlineNs,
                           const WaitHooks* hooks) {
    if (!hooks) return park(address, validate, deadlineNs);
    return parkInterruptible(address, validate, deadlineNs, [hooks] { return hooks->pending(); });
}

// The one spin policy before parking: up to kSpinLooks calls of tryOnce() (which looks at the
// word, and takes it when it can), with exponential backoff between them (1, 2, 4, ... kMaxPauses
// pauses; ~380 pauses in all, a few microseconds). Each look pulls the word's cache line away
// from the holder, so looking less often lets the holder run at its uncontended speed. Measured
// with bench/pthread-prims (mutex_contended_4t, 2 cores): a look per pause gave 0.5x native
// throughput, this backoff ~1.3x; fewer looks (8) or a shorter backoff (8 pauses) ~1x. Bounded
// because a holder on the spinner's own core cannot run until the spinner parks.
constexpr int kSpinLooks = 16;
constexpr int kMaxPauses = 32;
template <typename TryOnce>
bool spinBriefly(TryOnce tryOnce) {
    for (int i = 0, pauses = 1; i < kSpinLooks; ++i) {
        if (tryOnce()) return true;
        for (int p = 0; p < pauses; ++p) __builtin_ia32_pause();
        if (pauses < kMaxPauses) pauses *= 2;
    }
    return false;
}

}  // namespace internal

// ---- Mutex: Drepper's three-state lock word ("mutex2"), the parking lot in place of the futex.
// The word is kFree, kLocked, kContended (locked, and waiters may be parked on the word's address)
// or kOwnerDied (free; its last holder died holding it: only robust mutexes ever store it, and
// whoever takes it then gets WaitStatus::ownerDied). Woken waiters re-contend (no hand-off).
constexpr uint32_t kFree = 0, kLocked = 1, kContended = 2, kOwnerDied = 0x40000000;

// ok, ownerDied or busy; never waits. Acquire on success: pairs with mutexUnlock's release. The
// first CAS is the whole uncontended case; the loop retries only while the word it saw was free.
inline WaitStatus mutexTryLock(std::atomic<uint32_t>& word) {
    uint32_t w = kFree;
    if (word.compare_exchange_strong(w, kLocked, std::memory_order_acquire)) return WaitStatus::ok;
    while (w == kFree || w == kOwnerDied) {
        const uint32_t seen = w;
        if (word.compare_exchange_weak(w, kLocked, std::memory_order_acquire)) {
            return seen == kOwnerDied ? WaitStatus::ownerDied : WaitStatus::ok;
        }
    }
    return WaitStatus::busy;
}

// Spins briefly, then parks: ok, ownerDied, timedOut, or interrupted (only if hooks->act() says
// so; the word is left as the other waiters need it).
WaitStatus mutexLockSlow(std::atomic<uint32_t>& word, uint64_t deadlineNs, const WaitHooks* hooks);

// The uncontended case is one CAS, inline.
inline WaitStatus mutexLock(std::atomic<uint32_t>& word, uint64_t deadlineNs,
                            const WaitHooks* hooks) {
    uint32_t w = kFree;
    if (word.compare_exchange_strong(w, kLocked, std::memory_order_acquire)) return WaitStatus::ok;
    return mutexLockSlow(word, deadlineNs, hooks);
}

// Frees the word (`to`: kFree, or kOwnerDied for a robust mutex whose holder ends) and wakes one
// waiter if any may be parked. Release: the critical section happens before the next acquire.
inline void mutexUnlock(std::atomic<uint32_t>& word, uint32_t to = kFree) {
    if (word.exchange(to, std::memory_order_release) == kContended) unpark(&word, 1);
}

// ---- Condition variable: a sequence word bumped by every notify (waiters park on its address)
// and a count of waiters (lets a notify skip the parking lot when nobody waits). A waiter reads
// the sequence before it releases its mutex and parks only while the sequence is unchanged, so a
// notify in between is never lost; wake-ups may be spurious, as POSIX allows.
struct CondWords {
    std::atomic<uint32_t>& sequence;
    std::atomic<uint32_t>& waiters;
};

// Step 1, with the mutex held: counts the caller as a waiter and returns the sequence it must see
// change. Both seq_cst: pairs with condNotify's RMW-then-load (Dekker): either the notify reads
// our count, or we read its bump (and condWait returns at once).
inline uint32_t condBeginWait(CondWords c) {
    c.waiters.fetch_add(1, std::memory_order_seq_cst);
    return c.sequence.load(std::memory_order_seq_cst);
}
// Undoes step 1 when the caller could not release its mutex (nothing else was done).
inline void condAbandonWait(CondWords c) {
    c.waiters.fetch_sub(1, std::memory_order_relaxed);
}
// Step 2, after releasing the mutex: parks while the sequence still equals `observed`. ok (woken,
// or a notify came first), timedOut, or interrupted (hooks->pending(); the caller acts: it must
// do so around its mutex). The caller re-locks its mutex in every case.
WaitStatus condWait(CondWords c, uint32_t observed, uint64_t deadlineNs, const WaitHooks* hooks);
// Wakes up to `count` waiters (~0: all). Inline, so that a notify nobody waits for costs two
// atomic operations and no call. seq_cst bump, then seq_cst read of the count: the other half of
// condBeginWait's Dekker pair.
inline void condNotify(CondWords c, size_t count) {
    c.sequence.fetch_add(1, std::memory_order_seq_cst);
    if (c.waiters.load(std::memory_order_seq_cst) == 0) return;
    unpark(&c.sequence, count);
}

// ---- Readers-writer lock: one state word (bit 0 write-locked, bit 1 writers waiting, bit 2
// readers waiting, bits 3.. number of read holders) and two parking addresses, so that waking
// readers never wakes a writer and vice versa. A thread sets its waiting bit (only while the lock
// is held in a mode that blocks it) before it parks and re-checks it under the bucket lock, so
// the thread that frees the lock and clears the bit always finds it parked or makes it retry. A
// freed lock wakes every reader but only one writer; a writer that has parked acquires with the
// writers-waiting bit set (Drepper's rule) so that its own unlock wakes the next writer. With
// writer preference a waiting writer holds back new readers (recursive read locks then deadlock);
// with reader preference readers enter while a writer waits.
constexpr uint32_t kWriteLocked = 1, kWritersWaiting = 2, kReadersWaiting = 4, kOneReader = 8;
struct RwWords {
    std::atomic<uint32_t>& state;
    const void* readersQueue;  // parking addresses: any two distinct addresses the caller owns
    const void* writersQueue;
    bool preferWriters;
};
enum class RwMode { unlocked, read, write };

inline RwMode rwMode(const RwWords& rw) {
    const uint32_t s = rw.state.load(std::memory_order_relaxed);
    if (s & kWriteLocked) return RwMode::write;
    return s >= kOneReader ? RwMode::read : RwMode::unlocked;
}
// One attempt, never waiting: ok, busy, or overflow (too many readers).
WaitStatus rwTryRead(const RwWords& rw);
WaitStatus rwTryWrite(const RwWords& rw);
// ok, timedOut, interrupted (hooks->act() said so), or overflow (readers only).
WaitStatus rwReadLock(const RwWords& rw, uint64_t deadlineNs, const WaitHooks* hooks);
WaitStatus rwWriteLock(const RwWords& rw, uint64_t deadlineNs, const WaitHooks* hooks);
void rwReadUnlock(const RwWords& rw);
void rwWriteUnlock(const RwWords& rw);

// ---- Barrier with tickets: arrival t belongs to round t / count and is the round's last if
// t % count == count - 1, so more than `count` threads may arrive at once (they belong to the next
// round) and the barrier is reusable at once. `completed` counts finished rounds (mod 2^32;
// waiters park on its address); `inside` counts threads inside barrierWait, so that destroy can
// wait for the last ones to leave.
struct BarrierWords {
    std::atomic<uint64_t>& tickets;
    uint32_t count;  // > 0
    std::atomic<uint32_t>& completed;
    std::atomic<uint32_t>& inside;
};
// Returns true in exactly one thread per round (the last to arrive). A round completes only when
// its last thread arrives, so hooks->act()'s result is ignored (the wait goes on).
bool barrierWait(const BarrierWords& b, const WaitHooks* hooks);
// busy while a round is incomplete (threads are blocked in it); otherwise waits until the threads
// of the last round have left barrierWait (glibc lets a thread destroy and free the barrier as soon
// as its own wait returned) and returns ok.
WaitStatus barrierDestroy(const BarrierWords& b);

// ---- Semaphore: one 64-bit word, the value in its low 32 bits and the number of waiters in its
// high 32 bits (glibc's x86-64 layout); waiters park on its address. A waiter counts itself before
// it reads the value and post adds to the value with an RMW on the same word, so a post either
// sees the waiter (and unparks one) or happens before the waiter's read.
constexpr uint32_t kSemValueMax = 0x7fffffff;  // SEM_VALUE_MAX
constexpr uint64_t kSemOneWaiter = uint64_t{1} << 32;

inline uint32_t semValue(const std::atomic<uint64_t>& data) {
    return uint32_t(data.load(std::memory_order_relaxed));
}
// Takes one unit if there is one. Acquire: pairs with semPost's release.
inline bool semTryWait(std::atomic<uint64_t>& data) {
    uint64_t d = data.load(std::memory_order_relaxed);
    while (uint32_t(d) > 0) {
        if (data.compare_exchange_weak(d, d - 1, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
            return true;
        }
    }
    return false;
}
// ok, timedOut, or interrupted (hooks->act() said so).
WaitStatus semWait(std::atomic<uint64_t>& data, uint64_t deadlineNs, const WaitHooks* hooks);
// ok, or overflow (the value is kSemValueMax: nothing changed).
WaitStatus semPost(std::atomic<uint64_t>& data);

}  // namespace arbrt::words
