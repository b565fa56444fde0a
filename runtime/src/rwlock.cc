// Readers-writer lock. All state lives under the wait queue's spinlock; ownership is handed
// directly to woken waiters (they do not re-contend), so a woken writer cannot be overtaken.
#include "arbrt/sync.h"

namespace arbrt {

using detail::Waiter;

namespace {
constexpr uintptr_t kReaderTag = 0, kWriterTag = 1;
}

bool RwLock::canAcquire(bool writer) const {
    if (writer) return !writer_ && readers_ == 0;
    return !writer_ && (preferReaders_ || waitingWriters_ == 0);
}

// Grants the lock to the waiters at the head of the queue that can have it now: one writer, or a
// run of readers. Caller holds waiters_.lock; wake-ups are delivered after the caller unlocks.
void RwLock::wakeEligible() {
    constexpr int kBatch = 32;
    detail::WakeToken tokens[kBatch];
    int n = 0;
    for (;;) {
        while (n < kBatch && waiters_.head) {
            Waiter* w = waiters_.head;
            const bool writer = w->tag == kWriterTag;
            if (writer ? (writer_ || readers_ != 0) : writer_) break;
            waiters_.popFront();
            if (writer) {
                writer_ = true;
                --waitingWriters_;
            } else {
                ++readers_;
            }
            tokens[n++] = detail::claimWake(w);
            if (writer) break;
        }
        waiters_.lock.unlock();
        for (int i = 0; i < n; ++i) detail::deliverWake(tokens[i]);
        waiters_.lock.lock();
        if (n < kBatch || writer_) return;
        n = 0;
    }
}

bool RwLock::acquire(bool writer, uint64_t deadlineNs) {
    waiters_.lock.lock();
    if (canAcquire(writer) && (writer || !waiters_.head || preferReaders_)) {
        writer ? void(writer_ = true) : void(++readers_);
        waiters_.lock.unlock();
        return true;
    }
    if (deadlineNs == 0) {  // try-lock
        waiters_.lock.unlock();
        return false;
    }
    Waiter w;
    detail::initWaiter(&w);
    w.tag = writer ? kWriterTag : kReaderTag;
    if (writer) ++waitingWriters_;
    waiters_.pushBack(&w);
    waiters_.lock.unlock();
    if (detail::waitOn(waiters_, &w, deadlineNs)) return true;  // ownership was handed over
    waiters_.lock.lock();
    if (writer) --waitingWriters_;
    wakeEligible();  // readers held back by this writer may go now
    waiters_.lock.unlock();
    return false;
}

void RwLock::lockShared() {
    acquire(false, detail::kNoDeadline);
}
bool RwLock::tryLockShared() {
    return acquire(false, 0);
}
bool RwLock::lockSharedUntil(uint64_t deadlineNs) {
    return acquire(false, deadlineNs ? deadlineNs : 1);
}
void RwLock::lock() {
    acquire(true, detail::kNoDeadline);
}
bool RwLock::tryLock() {
    return acquire(true, 0);
}
bool RwLock::lockUntil(uint64_t deadlineNs) {
    return acquire(true, deadlineNs ? deadlineNs : 1);
}

void RwLock::unlockShared() {
    waiters_.lock.lock();
    if (--readers_ == 0) wakeEligible();
    waiters_.lock.unlock();
}

void RwLock::unlock() {
    waiters_.lock.lock();
    writer_ = false;
    wakeEligible();
    waiters_.lock.unlock();
}

}  // namespace arbrt
