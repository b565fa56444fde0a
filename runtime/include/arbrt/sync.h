// Synchronisation between user threads (and non-user kernel threads): no kernel call on the fast
// path. Each class is a thin layer over one algorithm of sync_words.h (the same ones the preload
// library's pthread objects use), with its words kept in the object: waiters park in the parking
// lot, keyed by the words' addresses. These waits are not interruptible (no WaitHooks).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <ctime>

#include "arbrt/sync_words.h"

namespace arbrt {

class Mutex {
  public:
    void lock() { words::mutexLock(word_, kNoDeadline, nullptr); }
    bool tryLock() { return words::mutexTryLock(word_) == words::WaitStatus::ok; }
    // Locks unless nowNs() reaches deadlineNs first (then returns false).
    bool lockUntil(uint64_t deadlineNs) {
        return words::mutexLock(word_, deadlineNs, nullptr) == words::WaitStatus::ok;
    }
    void unlock() { words::mutexUnlock(word_); }
    // std::lock_guard / std::unique_lock compatibility.
    bool try_lock() { return tryLock(); }

  private:
    std::atomic<uint32_t> word_{words::kFree};  // sync_words.h's mutex word
};

class CondVar {
  public:
    void wait(Mutex& mutex);
    // Returns false on time-out (the mutex is re-locked either way).
    bool waitUntil(Mutex& mutex, uint64_t deadlineNs);
    bool waitFor(Mutex& mutex, uint64_t timeoutNs);
    // Absolute deadline on CLOCK_MONOTONIC or CLOCK_REALTIME; false on time-out or a bad clock.
    bool waitUntil(Mutex& mutex, clockid_t clock, const timespec& deadline);
    void notifyOne();
    void notifyAll();

  private:
    words::CondWords words() { return {sequence_, waiters_}; }
    // sync_words.h's condition variable words.
    std::atomic<uint32_t> sequence_{0};
    std::atomic<uint32_t> waiters_{0};
};

// Readers-writer lock. With Preference::writers (the default) a waiting writer blocks new readers,
// so readers cannot starve writers; Preference::readers (glibc's default) lets readers in while a
// writer waits, so a thread may take the read lock recursively.
class RwLock {
  public:
    enum class Preference { writers, readers };
    explicit RwLock(Preference preference = Preference::writers)
        : preferWriters_(preference == Preference::writers) {}
    void lockShared();
    bool tryLockShared();
    bool lockSharedUntil(uint64_t deadlineNs);
    void unlockShared();
    void lock();
    bool tryLock();
    bool lockUntil(uint64_t deadlineNs);
    void unlock();

  private:
    words::RwWords words() { return {state_, &readersQueue_, &writersQueue_, preferWriters_}; }
    std::atomic<uint32_t> state_{0};  // sync_words.h's readers-writer state word
    // Parking addresses only (their values are never read).
    char readersQueue_ = 0;
    char writersQueue_ = 0;
    bool preferWriters_;
};

class Barrier {
  public:
    // A count of 0 behaves as 1 (every wait completes a round).
    explicit Barrier(unsigned count) : count_(count ? count : 1) {}
    // Waits until the threads still inside wait() have left it.
    ~Barrier();
    Barrier(const Barrier&) = delete;
    Barrier& operator=(const Barrier&) = delete;
    // Blocks until `count` threads have called wait(); returns true in exactly one of them per
    // cycle.
    bool wait();

  private:
    words::BarrierWords words() { return {tickets_, count_, completed_, inside_}; }
    // sync_words.h's barrier words.
    std::atomic<uint64_t> tickets_{0};
    std::atomic<uint32_t> completed_{0};
    std::atomic<uint32_t> inside_{0};
    uint32_t count_;
};

class Semaphore {
  public:
    explicit Semaphore(unsigned initial = 0) : data_(initial) {}
    void wait() { words::semWait(data_, kNoDeadline, nullptr); }
    bool tryWait() { return words::semTryWait(data_); }
    bool waitUntil(uint64_t deadlineNs) {
        return words::semWait(data_, deadlineNs, nullptr) == words::WaitStatus::ok;
    }
    // Adds one unit (none beyond words::kSemValueMax).
    void post() { words::semPost(data_); }
    unsigned value() const { return words::semValue(data_); }

  private:
    std::atomic<uint64_t> data_;  // sync_words.h's semaphore word
};

}  // namespace arbrt
