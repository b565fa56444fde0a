// Private robust mutexes: see robust.h.
#include "robust.h"

#include <errno.h>

#include <atomic>
#include <climits>

#include "arbrt/arbrt.h"
#include "interrupt.h"
#include "mutex_impl.h"
#include "real_libc.h"
#include "shim.h"

namespace arbrun {
namespace {

constexpr int kOwnerDied = 0x40000000;  // lock word: free, and its last owner died holding it
constexpr short kInconsistent = 1;
constexpr short kNotRecoverable = 2;
constexpr int kSpinIterations = 100;
constexpr int kTypeMask = 3;
constexpr int kAcquiredFromDeadOwner = -1;

std::atomic<int>& lockWord(pthread_mutex_t* m) {
    return *reinterpret_cast<std::atomic<int>*>(&m->__data.__lock);
}

// Flags are written by the holder only; read racily before locking (a hint re-checked after).
short flagsOf(pthread_mutex_t* m) {
    return __atomic_load_n(&m->__data.__spins, __ATOMIC_RELAXED);
}
void setFlags(pthread_mutex_t* m, short flags) {
    __atomic_store_n(&m->__data.__spins, flags, __ATOMIC_RELAXED);
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

// Releases the lock word to `value` (0, or kOwnerDied) and wakes one waiter if any may be parked.
void releaseTo(pthread_mutex_t* m, int value) {
    if (lockWord(m).exchange(value, std::memory_order_release) == 2) {
        arbrt::unpark(&lockWord(m), 1);
    }
}

HeldRobustMutexes::~HeldRobustMutexes() {
    while (pthread_mutex_t* m = head) {
        unlink(m);
        m->__data.__owner = 0;
        m->__data.__count = 0;
        releaseTo(m, kOwnerDied);
    }
}

// Takes the lock word: 0, kAcquiredFromDeadOwner, EBUSY (tryOnly) or ETIMEDOUT. A dead owner's
// word (kOwnerDied) counts as free.
int acquire(pthread_mutex_t* m, uint64_t deadlineNs, bool tryOnly) {
    std::atomic<int>& word = lockWord(m);
    for (int i = 0; i < (tryOnly ? 1 : kSpinIterations); ++i) {
        int w = word.load(std::memory_order_relaxed);
        while (w == 0 || w == kOwnerDied) {
            if (word.compare_exchange_weak(w, 1, std::memory_order_acquire)) {
                return w == kOwnerDied ? kAcquiredFromDeadOwner : 0;
            }
        }
        __builtin_ia32_pause();
    }
    if (tryOnly) return EBUSY;
    for (;;) {
        const int old = word.exchange(2, std::memory_order_acquire);
        if (old == 0) return 0;
        if (old == kOwnerDied) return kAcquiredFromDeadOwner;
        const auto r = arbrt::parkInterruptible(
            &word, [&] { return word.load(std::memory_order_relaxed) == 2; }, deadlineNs,
            [] { return signalInterruptPending(); });
        if (r == arbrt::ParkResult::timedOut) return ETIMEDOUT;
        if (r == arbrt::ParkResult::interrupted) runSignalHandlers();  // then waits on
    }
}

bool heldBy(pthread_mutex_t* m, int self) {
    const int w = lockWord(m).load(std::memory_order_relaxed);
    return m->__data.__owner == self && w != 0 && w != kOwnerDied;
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
        releaseTo(m, 0);
        return ENOTRECOVERABLE;
    }
    m->__data.__owner = self;
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
    m->__data.__owner = 0;
    m->__data.__count = 0;
    releaseTo(m, 0);
    return 0;
}

}  // namespace arbrun

using namespace arbrun;

namespace {

int consistent(pthread_mutex_t* m) {
    const int kind = __atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED);
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
