// pthread read-write locks over the runtime's readers-writer word (arbrt/sync_words.h, the
// algorithm arbrt::RwLock uses too) and the parking lot. All state lives in the object, in the
// fields glibc 2.36 (x86-64) has at these offsets, so PTHREAD_RWLOCK_INITIALIZER, the
// writer-preferring static initialiser, zero-filled memory and copies made before first use are
// valid unlocked locks:
//   __readers        (offset 0)  the state word: bit 0 write-locked, bit 1 writers waiting, bit 2
//                                readers waiting, bits 3.. number of read holders
//   __wrphase_futex  (offset 8)  readers park on its address (the value is unused)
//   __writers_futex  (offset 12) writers park on its address (the value is unused)
//   __cur_writer     (offset 24) selfId() of the write holder, 0 otherwise (EDEADLK, as glibc)
//   __shared         (offset 28) nonzero (glibc writes 1): process-shared, handled by the real libc
//   __flags          (offset 48) kind; PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP prefers
//                                writers, every other kind prefers readers (glibc also treats
//                                PTHREAD_RWLOCK_PREFER_WRITER_NP as prefer-reader)
#include <errno.h>
#include <pthread.h>

#include <atomic>
#include <cstring>

#include "arbrt/arbrt.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "sync/blocking_pass_through.h"
#include "sync/relaxed_field.h"
#include "sync/wait_hooks.h"

namespace arbrun {
namespace {

using arbrt::words::RwMode;
using arbrt::words::WaitStatus;

std::atomic<uint32_t>& state(pthread_rwlock_t* rw) {
    return *reinterpret_cast<std::atomic<uint32_t>*>(&rw->__data.__readers);
}

// Written by init only, before the lock is shared: relaxed.
bool passesThrough(const pthread_rwlock_t* rw) {
    return loadRelaxed(rw->__data.__shared) != 0;
}
bool prefersWriters(const pthread_rwlock_t* rw) {
    return loadRelaxed(rw->__data.__flags) == PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP;
}

// The words the shared algorithm works on; separate parking addresses so that waking readers
// never wakes a writer and vice versa.
arbrt::words::RwWords words(pthread_rwlock_t* rw) {
    return {state(rw), &rw->__data.__wrphase_futex, &rw->__data.__writers_futex,
            prefersWriters(rw)};
}

// The write holder's id: written only by the holder, read racily by lockers that check whether
// they hold it themselves (only their own write can match), so relaxed.
int32_t curWriter(pthread_rwlock_t* rw) {
    return loadRelaxed(rw->__data.__cur_writer);
}
void setCurWriter(pthread_rwlock_t* rw, int32_t id) {
    storeRelaxed(rw->__data.__cur_writer, id);
}

int toErrno(WaitStatus r) {
    switch (r) {
        case WaitStatus::ok:
            return 0;
        case WaitStatus::busy:
            return EBUSY;
        case WaitStatus::overflow:
            return EAGAIN;  // too many readers
        default:
            return ETIMEDOUT;  // never interrupted: kSignalsOnly waits on after handlers
    }
}

// Not cancellation points: a signal's handler runs while waiting, then the wait goes on.
int readLock(pthread_rwlock_t* rw, uint64_t deadlineNs) {
    if (curWriter(rw) == selfId()) return EDEADLK;
    return toErrno(arbrt::words::rwReadLock(words(rw), deadlineNs, &kSignalsOnly));
}

int writeLock(pthread_rwlock_t* rw, uint64_t deadlineNs) {
    if (curWriter(rw) == selfId()) return EDEADLK;
    const int err = toErrno(arbrt::words::rwWriteLock(words(rw), deadlineNs, &kSignalsOnly));
    if (err == 0) setCurWriter(rw, selfId());
    return err;
}

int tryWrite(pthread_rwlock_t* rw) {
    const int err = toErrno(arbrt::words::rwTryWrite(words(rw)));
    if (err == 0) setCurWriter(rw, selfId());
    return err;
}

// Failing try-locks let other user threads run: programs poll them (bodytrack), and the holder
// may be waiting for this core.
int yieldOnBusy(int err) {
    if (err == EBUSY && onUserThread()) arbrt::yield();
    return err;
}

}  // namespace
}  // namespace arbrun

using namespace arbrun;

ARBRUN_EXPORT int pthread_rwlock_init(pthread_rwlock_t* rw, const pthread_rwlockattr_t* attr) {
    int kind = PTHREAD_RWLOCK_DEFAULT_NP, pshared = PTHREAD_PROCESS_PRIVATE;
    if (attr) {
        pthread_rwlockattr_getkind_np(attr, &kind);
        pthread_rwlockattr_getpshared(attr, &pshared);
    }
    if (pshared == PTHREAD_PROCESS_SHARED) return ARBRUN_REAL(pthread_rwlock_init)(rw, attr);
    std::memset(rw, 0, sizeof *rw);
    rw->__data.__flags = unsigned(kind);
    return 0;
}

ARBRUN_EXPORT int pthread_rwlock_destroy(pthread_rwlock_t* rw) {
    if (passesThrough(rw)) return ARBRUN_REAL(pthread_rwlock_destroy)(rw);
    return 0;  // like glibc: nothing to release
}

ARBRUN_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t* rw) {
    if (passesThrough(rw))
        return asBlockingCall([&] { return ARBRUN_REAL(pthread_rwlock_rdlock)(rw); });
    return readLock(rw, arbrt::kNoDeadline);
}

ARBRUN_EXPORT int pthread_rwlock_tryrdlock(pthread_rwlock_t* rw) {
    if (passesThrough(rw)) return ARBRUN_REAL(pthread_rwlock_tryrdlock)(rw);
    return yieldOnBusy(toErrno(arbrt::words::rwTryRead(words(rw))));
}

ARBRUN_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t* rw, const timespec* abstime) {
    if (passesThrough(rw))
        return asBlockingCall([&] { return ARBRUN_REAL(pthread_rwlock_timedrdlock)(rw, abstime); });
    uint64_t deadline;
    if (int err = deadlineFrom(CLOCK_REALTIME, abstime, &deadline)) return err;
    return readLock(rw, deadline);
}

ARBRUN_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t* rw, clockid_t clock,
                                             const timespec* abstime) {
    if (passesThrough(rw))
        return asBlockingCall(
            [&] { return ARBRUN_REAL(pthread_rwlock_clockrdlock)(rw, clock, abstime); });
    uint64_t deadline;
    if (int err = deadlineFrom(clock, abstime, &deadline)) return err;
    return readLock(rw, deadline);
}

ARBRUN_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t* rw) {
    if (passesThrough(rw))
        return asBlockingCall([&] { return ARBRUN_REAL(pthread_rwlock_wrlock)(rw); });
    return writeLock(rw, arbrt::kNoDeadline);
}

ARBRUN_EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t* rw) {
    if (passesThrough(rw)) return ARBRUN_REAL(pthread_rwlock_trywrlock)(rw);
    return yieldOnBusy(tryWrite(rw));
}

ARBRUN_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t* rw, const timespec* abstime) {
    if (passesThrough(rw))
        return asBlockingCall([&] { return ARBRUN_REAL(pthread_rwlock_timedwrlock)(rw, abstime); });
    uint64_t deadline;
    if (int err = deadlineFrom(CLOCK_REALTIME, abstime, &deadline)) return err;
    return writeLock(rw, deadline);
}

ARBRUN_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t* rw, clockid_t clock,
                                             const timespec* abstime) {
    if (passesThrough(rw))
        return asBlockingCall(
            [&] { return ARBRUN_REAL(pthread_rwlock_clockwrlock)(rw, clock, abstime); });
    uint64_t deadline;
    if (int err = deadlineFrom(clock, abstime, &deadline)) return err;
    return writeLock(rw, deadline);
}

// The lock's mode decides which unlock this is (any thread may release a write lock here; glibc
// would misread that case as a read unlock). Unlocking a free lock is EPERM.
ARBRUN_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t* rw) {
    if (passesThrough(rw)) return ARBRUN_REAL(pthread_rwlock_unlock)(rw);
    switch (arbrt::words::rwMode(words(rw))) {
        case RwMode::write:
            setCurWriter(rw, 0);
            arbrt::words::rwWriteUnlock(words(rw));
            return 0;
        case RwMode::read:
            arbrt::words::rwReadUnlock(words(rw));
            return 0;
        default:
            return EPERM;
    }
}
