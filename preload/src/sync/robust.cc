// Private robust mutexes: see robust.h.
#include "sync/robust.h"

#include <errno.h>

#include <atomic>
#include <climits>

#include "arbrt/arbrt.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "sync/mutex_impl.h"
#include "sync/relaxed_field.h"
#include "sync/wait_hooks.h"

namespace arbrun {
namespace {

using arbrt::words::kOwnerDied;  // lock word: free, and its last owner died holding it
using arbrt::words::WaitStatus;
constexpr short kInconsistent = 1;
constexpr short kNotRecoverable = 2;
constexpr int kTypeMask = 3;
constexpr int kAcquiredFromDeadOwner = -1;

// __lock is sync_words.h's mutex word, as for every private mutex (mutex.cc).
std::atomic<uint32_t>& lockWord(pthread_mutex_t* m) {
    return *reinterpret_cast<std::atomic<uint32_t>*>(&m->__data.__lock);
}

// Flags are written by the holder only; read racily before locking (a hint re-checked after), so
// relaxed.
short flagsOf(pthread_mutex_t* m) {
    return loadRelaxed(m->__data.__spins);
}
void setFlags(pthread_mutex_t* m, short flags) {
    storeRelaxed(m->__data.__spins, flags);
}

// The holder's id: written only by the holder, read racily by threads checking whether they hold
// it (only their own write can match), so relaxed.
int ownerOf(pthread_mutex_t* m) {
    return loadRelaxed(m->__data.__owner);
}
void setOwner(pthread_mutex_t* m, int owner) {
    storeRelaxed(m->__data.__owner, owner);
}

// The calling thread's held robust mutexes, linked through __list. thread_local is per user
// thread (each has its own TLS); the destructor runs when the thread ends.
struct HeldRobustMutexes {
    pthread_mutex_t* head = nullptr;
    ~HeldRobustMutexes();
};
thread_local HeldRobustMutexes tHeld;

pthread_mutex_t* nextOf(pthread_mutex_t* m) {
    return reinterpret_cast<pthread_mutex_t*>(m->__data.__list.__next);
}
pthread_mutex_t* prevOf(pthread_mutex_t* m) {
    return reinterpret_cast<pthread_mutex_t*>(m->__data.__list.__prev);
}
__pthread_list_t* listLink(pthread_mutex_t* m) {
    return reinterpret_cast<__pthread_list_t*>(m);
}

void link(pthread_mutex_t* m) {
    m->__data.__list.__prev = nullptr;
    m->__data.__list.__next = listLink(tHeld.head);
    if (tHeld.head) tHeld.head->__data.__list.__prev = listLink(m);
    tHeld.head = m;
}

void unlink(pthread_mutex_t* m) {
    pthread_mutex_t* prev = prevOf(m);
    pthread_mutex_t* next = nextOf(m);
    if (prev) {
        prev->__data.__list.__next = listLink(next);
    } else {
        tHeld.head = next;
    }
    if (next) next->__data.__list.__prev = listLink(prev);
    m->__data.__list.__prev = m->__data.__list.__next = nullptr;
}

// Releases the lock word to `value` (kFree, or kOwnerDied) and wakes one waiter if any may be
// parked: the shared mutex algorithm (sync_words.h).
void releaseTo(pthread_mutex_t* m, uint32_t value) {
    arbrt::words::mutexUnlock(lockWord(m), value);
}

HeldRobustMutexes::~HeldRobustMutexes() {
    while (pthread_mutex_t* m = head) {
        unlink(m);
        setOwner(m, 0);
        m->__data.__count = 0;
        releaseTo(m, kOwnerDied);
    }
}

// Takes the lock word with the shared mutex algorithm, which counts a dead owner's word
// (kOwnerDied) as free: 0, kAcquiredFromDeadOwner, EBUSY (tryOnly) or ETIMEDOUT. A signal's
// handler runs while waiting, then the wait goes on.
int acquire(pthread_mutex_t* m, uint64_t deadlineNs, bool tryOnly) {
    const WaitStatus r = tryOnly ? arbrt::words::mutexTryLock(lockWord(m))
                                 : arbrt::words::mutexLock(lockWord(m), deadlineNs, &kSignalsOnly);
    switch (r) {
        case WaitStatus::ok:
            return 0;
        case WaitStatus::ownerDied:
            return kAcquiredFromDeadOwner;
        case WaitStatus::busy:
            return EBUSY;
        default:
            return ETIMEDOUT;
    }
}

bool heldBy(pthread_mutex_t* m, int self) {
    const uint32_t w = lockWord(m).load(std::memory_order_relaxed);
    return ownerOf(m) == self && w != arbrt::words::kFree && w != kOwnerDied;
}

}  // namespace

int robustLock(pthread_mutex_t* m, int kind, uint64_t deadlineNs, bool tryOnly) {
    if (flagsOf(m) & kNotRecoverable) return ENOTRECOVERABLE;
    const int self = selfId();
    const int type = kind & kTypeMask;
    if (heldBy(m, self)) {
        if (type == PTHREAD_MUTEX_RECURSIVE) {
            if (m->__data.__count == UINT_MAX) return EAGAIN;
            ++m->__data.__count;
            return 0;
        }
        if (type == PTHREAD_MUTEX_ERRORCHECK || tryOnly) return tryOnly ? EBUSY : EDEADLK;
        // A normal robust mutex relocked by its owner deadlocks, as with glibc.
    }
    const int r = acquire(m, deadlineNs, tryOnly);
    if (r > 0) return r;
    if (flagsOf(m) & kNotRecoverable) {  // became unrecoverable while we waited
        releaseTo(m, arbrt::words::kFree);
        return ENOTRECOVERABLE;
    }
    setOwner(m, self);
    m->__data.__count = 1;
    link(m);
    if (r == kAcquiredFromDeadOwner) {
        setFlags(m, kInconsistent);
        return EOWNERDEAD;
    }
    return 0;
}

int robustUnlock(pthread_mutex_t* m, int kind) {
    if (!heldBy(m, selfId())) return EPERM;  // glibc checks the owner of every robust mutex
    if ((kind & kTypeMask) == PTHREAD_MUTEX_RECURSIVE && --m->__data.__count != 0) return 0;
    unlink(m);
    // Unlocked without pthread_mutex_consistent(): the state it protects is lost for good.
    if (flagsOf(m) & kInconsistent) setFlags(m, kNotRecoverable);
    setOwner(m, 0);
    m->__data.__count = 0;
    releaseTo(m, arbrt::words::kFree);
    return 0;
}

}  // namespace arbrun

using namespace arbrun;

namespace {

int consistent(pthread_mutex_t* m) {
    const int kind = loadRelaxed(m->__data.__kind);
    if (kind < 0 || !(kind & kRobustFlag) || !(flagsOf(m) & kInconsistent) ||
        !heldBy(m, selfId())) {
        return EINVAL;
    }
    setFlags(m, 0);
    return 0;
}

}  // namespace

ARBRUN_EXPORT int pthread_mutex_consistent(pthread_mutex_t* m) {
    if (mutexPassesThrough(m)) return ARBRUN_REAL(pthread_mutex_consistent)(m);
    return consistent(m);
}

// The old name, still exported by glibc for old binaries (the header redirects new ones).
ARBRUN_EXPORT int consistentNp(pthread_mutex_t* m) __asm__("pthread_mutex_consistent_np");
ARBRUN_EXPORT int consistentNp(pthread_mutex_t* m) {
    using Fn = int (*)(pthread_mutex_t*);
    static const auto real = reinterpret_cast<Fn>(lookupReal("pthread_mutex_consistent_np"));
    if (mutexPassesThrough(m)) return real(m);
    return consistent(m);
}
