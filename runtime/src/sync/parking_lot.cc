// The parking lot's hash table. Concurrency: a bucket's list and every linked Waiter's key/links
// are guarded by the bucket's lock; a Waiter's state changes to kWoken/kTimedOut only under the
// lock of the bucket it is linked in (so a timing-out waiter and a waker agree on who unlinks it).
#include "arbrt/parking_lot.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <new>

#include "arbrt/embed/fork.h"

#include "arbrt/thread.h"
#include "arbrt/time.h"
#include "sync/wait_queue.h"

namespace arbrt {
namespace {

using detail::Waiter;
using detail::WaitQueue;
using detail::WakeToken;

struct alignas(64) Bucket {
    WaitQueue queue;
};

constexpr size_t kBucketBits = 12;
constexpr size_t kPage = 4096;
constexpr size_t kBucketsPerPage = kPage / sizeof(Bucket);
constexpr size_t kBucketPages = (size_t(1) << kBucketBits) / kBucketsPerPage;
static_assert(kBucketPages <= 64, "gBucketPagesUsed has one bit per page of buckets");
alignas(kPage) Bucket gBuckets[size_t(1) << kBucketBits];

// Pages of gBuckets in which a bucket was ever looked up (bit i: buckets [i * kBucketsPerPage,
// (i + 1) * kBucketsPerPage)). Set before the bucket's lock is taken, by a load and, the first time
// only, a fetch_or, so a lookup writes no shared line once its page is known. A fork child resets
// only these pages (resetParkingLotAfterFork): the others hold buckets in their initial state and
// were never faulted in; resetting all 64 pages (256 KiB) was 64 of the 150 page faults of a fork
// under the runtime. A bucket's state is never stored before its bit: x86 keeps stores in order,
// and fork copies memory as the parent left it at some instant of each page.
std::atomic<uint64_t> gBucketPagesUsed{0};

Bucket& bucketFor(uintptr_t address) {
    const size_t index = ((address >> 2) * 0x9E3779B97F4A7C15ull) >> (64 - kBucketBits);
    const uint64_t bit = uint64_t{1} << (index / kBucketsPerPage);
    if (!(gBucketPagesUsed.load(std::memory_order_relaxed) & bit))
        gBucketPagesUsed.fetch_or(bit, std::memory_order_relaxed);
    return gBuckets[index];
}

constexpr size_t kBatch = 32;

// Unlinks and claims up to `limit` waiters on `address` (bitset-matching) from a locked bucket.
size_t claimMatching(Bucket& b, uintptr_t address, uint32_t bitset, size_t limit, WakeToken* out) {
    size_t n = 0;
    for (Waiter* w = b.queue.head; w && n < limit;) {
        Waiter* next = w->next;
        if (w->key.load(std::memory_order_relaxed) == address && (w->bitset & bitset)) {
            b.queue.remove(w);
            out[n++] = detail::claimWake(w);
        }
        w = next;
    }
    return n;
}

// Lock order for two buckets: by address, so concurrent requeues cannot deadlock.
void lockPair(Bucket& a, Bucket& b) {
    if (&a == &b) {
        a.queue.lock.lock();
    } else if (&a < &b) {
        a.queue.lock.lock();
        b.queue.lock.lock();
    } else {
        b.queue.lock.lock();
        a.queue.lock.lock();
    }
}

void unlockPair(Bucket& a, Bucket& b) {
    a.queue.lock.unlock();
    if (&a != &b) b.queue.lock.unlock();
}

// Shared by park() and parkInterruptible(); `interrupted` null: not interruptible.
ParkResult parkImpl(const void* address, FunctionRef<bool()> validate, uint64_t deadlineNs,
                    uint32_t bitset, const FunctionRef<bool()>* interrupted) {
    const auto key = reinterpret_cast<uintptr_t>(address);
    Waiter w;
    detail::initWaiter(&w);
    w.key.store(key, std::memory_order_relaxed);
    w.bitset = bitset;
    Bucket& b = bucketFor(key);
    b.queue.lock.lock();
    if (!validate()) {
        b.queue.lock.unlock();
        return ParkResult::invalid;
    }
    b.queue.pushBack(&w);
    b.queue.lock.unlock();
    const bool woken = interrupted ? detail::parkUntilWokenOr(&w, deadlineNs, *interrupted)
                                   : detail::parkUntilWoken(&w, deadlineNs);
    if (woken) return ParkResult::woken;
    // Timed out (or interrupted); a requeue may have moved us: lock the bucket of our current key
    // and confirm it.
    for (;;) {
        const uintptr_t current = w.key.load(std::memory_order_acquire);
        Bucket& cb = bucketFor(current);
        cb.queue.lock.lock();
        if (w.key.load(std::memory_order_relaxed) != current) {
            cb.queue.lock.unlock();
            continue;
        }
        if (w.state.load(std::memory_order_relaxed) == Waiter::kWaiting) {
            cb.queue.remove(&w);
            w.state.store(Waiter::kTimedOut, std::memory_order_relaxed);
            cb.queue.lock.unlock();
            // An interruption wins over a deadline that passed meanwhile: the caller acts on it.
            // And a wait whose deadline has not passed did not time out, even if what interrupted
            // it is gone by now (a process-directed signal another thread took): that is an
            // interruption with nothing left to act on, which callers treat as a spurious wake-up.
            // Saying timedOut there made an untimed pthread_cond_wait return ETIMEDOUT.
            if (interrupted &&
                (deadlineNs == kNoDeadline || nowNs() < deadlineNs || (*interrupted)())) {
                return ParkResult::interrupted;
            }
            return ParkResult::timedOut;
        }
        cb.queue.lock.unlock();
        detail::parkUntilWoken(&w, kNoDeadline);  // a wake-up is already on its way
        return ParkResult::woken;
    }
}

}  // namespace

namespace detail {

bool parkUntilWokenOr(Waiter* w, uint64_t deadlineNs, FunctionRef<bool()> interrupted) {
    if (!self()) return parkUntilWoken(w, deadlineNs);
    // The waker's claimWake() store (release) pairs with this acquire; block()'s permit makes a
    // wake-up or an interruption between the checks and block() return at once.
    while (w->state.load(std::memory_order_acquire) == Waiter::kWaiting) {
        if (interrupted()) return false;
        if (deadlineNs == kNoDeadline) {
            block();
        } else if (nowNs() >= deadlineNs) {
            return false;
        } else {
            blockUntil(deadlineNs);
        }
    }
    return true;
}

}  // namespace detail

ParkResult park(const void* address, FunctionRef<bool()> validate, uint64_t deadlineNs,
                uint32_t bitset) {
    return parkImpl(address, validate, deadlineNs, bitset, nullptr);
}

ParkResult parkInterruptible(const void* address, FunctionRef<bool()> validate, uint64_t deadlineNs,
                             FunctionRef<bool()> interrupted, uint32_t bitset) {
    return parkImpl(address, validate, deadlineNs, bitset, &interrupted);
}

size_t unpark(const void* address, size_t count, uint32_t bitset) {
    const auto key = reinterpret_cast<uintptr_t>(address);
    Bucket& b = bucketFor(key);
    size_t woken = 0;
    while (woken < count) {
        WakeToken tokens[kBatch];
        b.queue.lock.lock();
        const size_t n = claimMatching(b, key, bitset, std::min(kBatch, count - woken), tokens);
        b.queue.lock.unlock();
        for (size_t i = 0; i < n; ++i) detail::deliverWake(tokens[i]);
        woken += n;
        if (n < kBatch) break;
    }
    return woken;
}

long requeue(const void* from, const void* to, size_t wakeCount, size_t requeueCount,
             FunctionRef<bool()> validate) {
    const auto fromKey = reinterpret_cast<uintptr_t>(from);
    const auto toKey = reinterpret_cast<uintptr_t>(to);
    Bucket& a = bucketFor(fromKey);
    Bucket& b = bucketFor(toKey);
    lockPair(a, b);
    if (!validate()) {
        unlockPair(a, b);
        return -1;
    }
    // Wake first (bounded batch under the lock; the rest of wakeCount is woken after unlocking).
    // The waiters that rest is for are the next ones in line: they stay on `from` (skipped by the
    // requeue below), and the unpark after unlocking takes them, oldest first.
    WakeToken tokens[kBatch];
    const size_t n = claimMatching(a, fromKey, ~0u, std::min(kBatch, wakeCount), tokens);
    size_t toSkip = wakeCount - n;  // n < kBatch means nobody else matched: nothing is skipped
    size_t moved = 0;
    for (Waiter* w = a.queue.head; w && moved < requeueCount;) {
        Waiter* next = w->next;
        if (w->key.load(std::memory_order_relaxed) == fromKey) {
            if (toSkip > 0) {
                --toSkip;
                w = next;
                continue;
            }
            a.queue.remove(w);
            w->key.store(toKey, std::memory_order_release);
            b.queue.pushBack(w);
            ++moved;
        }
        w = next;
    }
    unlockPair(a, b);
    for (size_t i = 0; i < n; ++i) detail::deliverWake(tokens[i]);
    size_t extra = 0;
    if (n == kBatch && wakeCount > kBatch) extra = unpark(from, wakeCount - kBatch);
    return long(n + extra + moved);
}

namespace detail {
void resetParkingLotAfterFork() {
    // Placement-new over each bucket a parent's thread may have used: its lock may be held by a
    // carrier that does not exist here, its waiters are threads that do not either.
    const uint64_t used = gBucketPagesUsed.load(std::memory_order_relaxed);
    for (size_t page = 0; page < kBucketPages; ++page) {
        if (!(used & (uint64_t{1} << page))) continue;
        for (size_t i = page * kBucketsPerPage; i < (page + 1) * kBucketsPerPage; ++i)
            new (&gBuckets[i]) Bucket();
    }
}
}  // namespace detail

size_t parkedCount(const void* address) {
    const auto key = reinterpret_cast<uintptr_t>(address);
    Bucket& b = bucketFor(key);
    size_t n = 0;
    b.queue.lock.lock();
    for (Waiter* w = b.queue.head; w; w = w->next) {
        if (w->key.load(std::memory_order_relaxed) == key) ++n;
    }
    b.queue.lock.unlock();
    return n;
}

}  // namespace arbrt
