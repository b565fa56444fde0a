// pthread mutexes over the runtime's mutex word (arbrt/sync_words.h, the algorithm arbrt::Mutex
// uses too) and the parking lot. The object's own fields hold all state, laid out as glibc lays
// them out (so static initialisers, zero-filled memory and copies before first use work):
//   __lock   the mutex word: 0 free, 1 locked, 2 locked and waiters may be parked on &__lock
//   __count  recursion depth (recursive mutexes)
//   __owner  selfId() of the holder (all types; errorcheck/recursive rely on it)
//   __kind   type | flags, as set by pthread_mutex_init or a static initialiser
// Process-private robust mutexes are implemented here too (robust.h). Priority-inheritance and
// priority-protection mutexes (PTHREAD_PRIO_INHERIT/PROTECT) keep their type's semantics and error
// codes but change no priority: user threads have no kernel priority to boost, and glibc's PI/PP
// code would change the carrier's (PI futexes are keyed by kernel tids, PP calls sched_setparam).
// Their flags stay in __kind (for pthread_mutexattr round trips through glibc); the PP ceiling is
// not kept (pthread_mutex_getprioceiling reads 0).
// Process-shared mutexes (robust or not) go to the real libc, whose state other processes read.
// Caveat there: glibc records the owner as the thread's id, which for a user thread is a unique
// value >= 0x400000 within this process but not across processes, so two processes' user threads
// may share an id (a process-shared errorcheck/recursive/robust mutex can then misattribute
// ownership), and the kernel's robust lists are those of kernel threads: a process that dies while
// a user thread holds a process-shared robust mutex (except a fork child's surviving thread, whose
// TCB glibc registered) leaves it locked instead of giving the next locker EOWNERDEAD.
#include <errno.h>
#include <pthread.h>

#include <atomic>
#include <climits>
#include <cstring>

#include "arbrt/arbrt.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "sync/blocking_pass_through.h"
#include "sync/mutex_impl.h"
#include "sync/relaxed_field.h"
#include "sync/robust.h"
#include "sync/wait_hooks.h"

namespace arbrun {
namespace {

constexpr int kTypeMask = 3;            // normal(timed) / recursive / errorcheck / adaptive
constexpr int kPassThroughFlags = 128;  // process-shared
constexpr int kPrioInheritFlag = 32, kPrioProtectFlag = 64;

using arbrt::words::WaitStatus;

// __lock is sync_words.h's mutex word (an int in glibc's layout, used as unsigned).
static_assert(sizeof(__pthread_mutex_s::__lock) == sizeof(std::atomic<uint32_t>) &&
              std::atomic<uint32_t>::is_always_lock_free);
std::atomic<uint32_t>& lockWord(pthread_mutex_t* m) {
    return *reinterpret_cast<std::atomic<uint32_t>*>(&m->__data.__lock);
}

// Written by init and destroy, read by every operation: relaxed, the hint that picks the path
// (using a mutex concurrently with its init or destroy is undefined).
int kindOf(const pthread_mutex_t* m) {
    return loadRelaxed(m->__data.__kind);
}

// The shared mutex algorithm (sync_words.h); a signal's handler runs while waiting, then the wait
// goes on (not a cancellation point): 0 or ETIMEDOUT.
int acquire(pthread_mutex_t* m, uint64_t deadlineNs) {
    return arbrt::words::mutexLock(lockWord(m), deadlineNs, &kSignalsOnly) == WaitStatus::timedOut
               ? ETIMEDOUT
               : 0;
}

void release(pthread_mutex_t* m) {
    arbrt::words::mutexUnlock(lockWord(m));
}

// The holder's id: written only by the holder, read racily by lockers that check whether they
// hold it themselves (only their own earlier write can match), so relaxed.
int ownerOf(const pthread_mutex_t* m) {
    return loadRelaxed(m->__data.__owner);
}
void setOwner(pthread_mutex_t* m, int owner) {
    storeRelaxed(m->__data.__owner, owner);
}

// Type-specific checks around acquire(): recursion, self-deadlock.
int lockTyped(pthread_mutex_t* m, int kind, uint64_t deadlineNs, bool tryOnly) {
    if (kind & kRobustFlag) return robustLock(m, kind, deadlineNs, tryOnly);
    const int self = selfId();
    const int type = kind & kTypeMask;
    if (type == PTHREAD_MUTEX_RECURSIVE && ownerOf(m) == self) {
        if (m->__data.__count == UINT_MAX) return EAGAIN;
        ++m->__data.__count;
        return 0;
    }
    if (type == PTHREAD_MUTEX_ERRORCHECK && ownerOf(m) == self) {
        return tryOnly ? EBUSY : EDEADLK;
    }
    if (tryOnly) {
        if (arbrt::words::mutexTryLock(lockWord(m)) != WaitStatus::ok) return EBUSY;
    } else if (int err = acquire(m, deadlineNs)) {
        return err;
    }
    setOwner(m, self);
    m->__data.__count = 1;
    return 0;
}

}  // namespace

bool mutexPassesThrough(const pthread_mutex_t* m) {
    return kindOf(m) & kPassThroughFlags;
}

int mutexLock(pthread_mutex_t* m, uint64_t deadlineNs) {
    const int kind = kindOf(m);
    if (kind < 0) return EINVAL;  // destroyed
    return lockTyped(m, kind, deadlineNs, false);
}

int mutexUnlock(pthread_mutex_t* m) {
    const int kind = kindOf(m);
    if (kind < 0) return EINVAL;
    if (kind & kRobustFlag) return robustUnlock(m, kind);
    const int type = kind & kTypeMask;
    if (type == PTHREAD_MUTEX_RECURSIVE || type == PTHREAD_MUTEX_ERRORCHECK) {
        if (ownerOf(m) != selfId() || lockWord(m).load(std::memory_order_relaxed) == 0) {
            return EPERM;
        }
        if (type == PTHREAD_MUTEX_RECURSIVE && --m->__data.__count != 0) return 0;
    }
    setOwner(m, 0);
    m->__data.__count = 0;
    release(m);
    return 0;
}

}  // namespace arbrun

using namespace arbrun;

ARBRUN_EXPORT int pthread_mutex_init(pthread_mutex_t* m, const pthread_mutexattr_t* attr) {
    int type = PTHREAD_MUTEX_DEFAULT, pshared = PTHREAD_PROCESS_PRIVATE;
    int robust = PTHREAD_MUTEX_STALLED, protocol = PTHREAD_PRIO_NONE;
    if (attr) {
        pthread_mutexattr_gettype(attr, &type);
        pthread_mutexattr_getpshared(attr, &pshared);
        pthread_mutexattr_getrobust(attr, &robust);
        pthread_mutexattr_getprotocol(attr, &protocol);
    }
    if (pshared == PTHREAD_PROCESS_SHARED) {
        return ARBRUN_REAL(pthread_mutex_init)(m, attr);  // glibc encodes the flags in __kind
    }
    std::memset(m, 0, sizeof *m);
    m->__data.__kind = type | (robust == PTHREAD_MUTEX_ROBUST ? kRobustFlag : 0) |
                       (protocol == PTHREAD_PRIO_INHERIT ? kPrioInheritFlag : 0) |
                       (protocol == PTHREAD_PRIO_PROTECT ? kPrioProtectFlag : 0);
    return 0;
}

ARBRUN_EXPORT int pthread_mutex_destroy(pthread_mutex_t* m) {
    if (mutexPassesThrough(m)) return ARBRUN_REAL(pthread_mutex_destroy)(m);
    // Like glibc: a robust mutex is never EBUSY (its owner may have died holding it).
    if (!(kindOf(m) & kRobustFlag) && lockWord(m).load(std::memory_order_relaxed) != 0)
        return EBUSY;
    storeRelaxed(m->__data.__kind, -1);  // like glibc: later use is EINVAL
    return 0;
}

ARBRUN_EXPORT int pthread_mutex_lock(pthread_mutex_t* m) {
    if (mutexPassesThrough(m))
        return asBlockingCall([&] { return ARBRUN_REAL(pthread_mutex_lock)(m); });
    return mutexLock(m, arbrt::kNoDeadline);
}

ARBRUN_EXPORT int pthread_mutex_trylock(pthread_mutex_t* m) {
    if (mutexPassesThrough(m)) return ARBRUN_REAL(pthread_mutex_trylock)(m);
    const int kind = kindOf(m);
    if (kind < 0) return EINVAL;
    const int err = lockTyped(m, kind, 0, true);
    // A failing trylock lets other user threads run: PARSEC spins on it (streamcluster,
    // fluidanimate) and the holder may be waiting for this core.
    if (err == EBUSY && onUserThread()) arbrt::yield();
    return err;
}

ARBRUN_EXPORT int pthread_mutex_timedlock(pthread_mutex_t* m, const timespec* abstime) {
    if (mutexPassesThrough(m))
        return asBlockingCall([&] { return ARBRUN_REAL(pthread_mutex_timedlock)(m, abstime); });
    uint64_t deadline;
    if (int err = deadlineFrom(CLOCK_REALTIME, abstime, &deadline)) return err;
    return mutexLock(m, deadline);
}

ARBRUN_EXPORT int pthread_mutex_clocklock(pthread_mutex_t* m, clockid_t clock,
                                          const timespec* abstime) {
    if (mutexPassesThrough(m))
        return asBlockingCall(
            [&] { return ARBRUN_REAL(pthread_mutex_clocklock)(m, clock, abstime); });
    uint64_t deadline;
    if (int err = deadlineFrom(clock, abstime, &deadline)) return err;
    return mutexLock(m, deadline);
}

ARBRUN_EXPORT int pthread_mutex_unlock(pthread_mutex_t* m) {
    if (mutexPassesThrough(m)) return ARBRUN_REAL(pthread_mutex_unlock)(m);
    return mutexUnlock(m);
}
