// SpinLock's slow path and its rank checks (arbrt/embed/spin_lock.h).
#include "arbrt/embed/spin_lock.h"

#include <linux/futex.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "platform/sys.h"

namespace arbrt::detail {
namespace {

// Looks at the word with exponential backoff between looks (1, 2, 4 ... kMaxPauses pauses): about
// a microsecond in all. Each look pulls the line from the holder, so looking less often lets the
// holder finish at full speed.
constexpr int kSpinLooks = 12;
constexpr int kMaxPauses = 64;
// Then this many sched_yield()s: the holder may be runnable on this very CPU.
constexpr int kYields = 4;

// One line to stderr without stdio or allocation (this may run in a signal handler, or with the
// allocator's own lock held by the thread we wait for).
void writeDeadlockWarning(LockRank rank) {
    char line[160] = "arbrun: waited over a second for the ";
    strncat(line, kLockRanks[size_t(rank)].name, 40);
    strncat(line, " lock; deadlock?\n", sizeof line - strlen(line) - 1);
    rawSyscall(SYS_write, 2, reinterpret_cast<long>(line), long(strlen(line)));
}

// The ranked locks this thread (kernel thread, or user thread: locks are never held across a
// context switch, so the two are the same while any is held) holds, in acquisition order. Only
// checked builds touch it. constinit: no TLS initialisation wrapper on the lock path.
struct HeldLocks {
    static constexpr int kMax = 16;
    const SpinLock* locks[kMax];
    int count;
};
constinit thread_local HeldLocks tHeld{};

// Names both locks: "taking <rank> while holding <rank>".
[[noreturn]] void reportRankViolation(LockRank held, LockRank taken) {
    char why[200] = "lock order (arbrt/embed/spin_lock.h, kLockRanks): taking the ";
    strncat(why, kLockRanks[size_t(taken)].name, 40);
    strncat(why, " lock while holding the ", sizeof why - strlen(why) - 1);
    strncat(why, kLockRanks[size_t(held)].name, 40);
    strncat(why, " lock", sizeof why - strlen(why) - 1);
    invariantFailed(__FILE__, __LINE__, "lock rank", why);
}

}  // namespace

int rankedLocksHeld() {
    return kCheckInvariants ? tHeld.count : 0;
}

// Every attempt looks at the word first: a failing CAS would pull the line from the holder.
void SpinLock::lockSlow() {
    const uint32_t base = this->base();
    for (int i = 0, pauses = 1; i < kSpinLooks; ++i) {
        for (int p = 0; p < pauses; ++p) __builtin_ia32_pause();
        if (pauses < kMaxPauses) pauses *= 2;
        if (word_.load(std::memory_order_relaxed) == (base | kFree) && tryAcquire()) return;
    }
    for (int i = 0; i < kYields; ++i) {
        sysCall(SYS_sched_yield);
        if (word_.load(std::memory_order_relaxed) == (base | kFree) && tryAcquire()) return;
    }
    // Sleep. Taking the lock with kSleepers (not kLocked) is what keeps a later sleeper's wake-up:
    // we cannot know whether others still sleep, so our unlock() must wake one (Drepper's mutex).
    bool warned = false;
    while (word_.exchange(base | kSleepers, std::memory_order_acquire) != (base | kFree)) {
        const timespec oneSecond{1, 0};
        const long r = sysCall(SYS_futex, reinterpret_cast<long>(&word_), FUTEX_WAIT_PRIVATE,
                               base | kSleepers, reinterpret_cast<long>(&oneSecond));
        if (r == -ETIMEDOUT && !warned) {
            warned = true;
            writeDeadlockWarning(rank());
        }
    }
}

void SpinLock::wakeOne() {
    sysCall(SYS_futex, reinterpret_cast<long>(&word_), FUTEX_WAKE_PRIVATE, 1);
}

// Checked builds: the rank rule, on the lock just acquired (so a violation is reported by the
// thread that broke the order, with both locks named in the assertion's reason).
void SpinLock::noteAcquired() {
    const LockRank rank = this->rank();
    if (rank == LockRank::unranked) return;
    HeldLocks& held = tHeld;
    if (held.count > 0) {
        const SpinLock* top = held.locks[held.count - 1];
        const LockRankInfo& info = kLockRanks[size_t(rank)];
        bool ordered = top->rank() < rank;
        if (top->rank() == rank) {
            ordered = info.nestsInAddressOrder && top < this;
            for (int i = 0; !ordered && info.nestsUnder != LockRank::unranked && i < held.count;
                 ++i) {
                ordered = held.locks[i]->rank() == info.nestsUnder;
            }
        }
        if (!ordered) reportRankViolation(top->rank(), rank);
    }
    ARB_ASSERT(held.count < HeldLocks::kMax, "more ranked locks held at once than expected");
    if (held.count < HeldLocks::kMax) held.locks[held.count++] = this;
}

// Locks are released in any order (a two-bucket requeue releases them as convenient); the record
// must hold this lock, or it was unlocked by a thread that did not lock it.
void SpinLock::noteReleased() {
    if (rank() == LockRank::unranked) return;
    HeldLocks& held = tHeld;
    for (int i = held.count - 1; i >= 0; --i) {
        if (held.locks[i] == this) {
            for (int j = i; j + 1 < held.count; ++j) held.locks[j] = held.locks[j + 1];
            --held.count;
            return;
        }
    }
    ARB_ASSERT(false, "a ranked lock is released by a thread that does not hold it");
}

}  // namespace arbrt::detail
