// pthread read-write locks on the runtime's parking lot. All state lives in the object, in the
// fields glibc 2.36 (x86-64) has at these offsets, so PTHREAD_RWLOCK_INITIALIZER, the
// writer-preferring static initialiser, zero-filled memory and copies made before first use are
// valid unlocked locks:
//   __readers        (offset 0)  state word: bit 0 write-locked, bit 1 writers waiting, bit 2
//                                readers waiting, bits 3.. number of read holders
//   __wrphase_futex  (offset 8)  readers park on its address (the value is unused)
//   __writers_futex  (offset 12) writers park on its address (the value is unused)
//   __cur_writer     (offset 24) selfId() of the write holder, 0 otherwise (EDEADLK, as glibc)
//   __shared         (offset 28) nonzero (glibc writes 1): process-shared, handled by the real libc
//   __flags          (offset 48) kind; PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP prefers
//                                writers, every other kind prefers readers (glibc also treats
//                                PTHREAD_RWLOCK_PREFER_WRITER_NP as prefer-reader)
// Waiting bits: a thread sets its bit (only while the lock is held in a mode that blocks it)
// before it parks, and re-checks it under the parking lot's bucket lock, so the thread that frees
// the lock and clears the bit always finds it parked or makes it retry. A freed lock wakes every
// reader but only one writer; a writer that has parked acquires with the writers-waiting bit set
// (Drepper's rule) so that its own unlock wakes the next writer.
#include <errno.h>
#include <pthread.h>

#include <atomic>
#include <cstring>

#include "arbrt/arbrt.h"
#include "blocking_pass_through.h"
#include "interrupt.h"
#include "real_libc.h"
#include "shim.h"

namespace arbrun {
namespace {

constexpr uint32_t kWriteLocked = 1, kWritersWaiting = 2, kReadersWaiting = 4, kOneReader = 8;
constexpr uint32_t kMaxReaders = ~0u / kOneReader;
constexpr int kSpinIterations = 64;

std::atomic<uint32_t>& state(pthread_rwlock_t* rw) {
    return *reinterpret_cast<std::atomic<uint32_t>*>(&rw->__data.__readers);
}
// Parking addresses: separate words so that unpark(readers) never wakes a writer and vice versa.
const void* readersQueue(pthread_rwlock_t* rw) {
    return &rw->__data.__wrphase_futex;
}
const void* writersQueue(pthread_rwlock_t* rw) {
    return &rw->__data.__writers_futex;
}

uint32_t readers(uint32_t s) {
    return s / kOneReader;
}

bool passesThrough(const pthread_rwlock_t* rw) {
    return __atomic_load_n(&rw->__data.__shared, __ATOMIC_RELAXED) != 0;
}

bool prefersWriters(const pthread_rwlock_t* rw) {
    return __atomic_load_n(&rw->__data.__flags, __ATOMIC_RELAXED) ==
           PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP;
}

// A new reader waits while a writer holds the lock, and with writer preference also while a
// writer waits (that is what makes recursive read locks deadlock there, as documented).
bool readerBlocked(uint32_t s, bool writerFirst) {
    return (s & kWriteLocked) || (writerFirst && (s & kWritersWaiting));
}

bool writerBlocked(uint32_t s) {
    return (s & kWriteLocked) || readers(s) != 0;
}

int32_t curWriter(pthread_rwlock_t* rw) {
    return __atomic_load_n(&rw->__data.__cur_writer, __ATOMIC_RELAXED);
}

// Called by the thread that made the lock free, after it cleared kWritersWaiting
// (`writersWaited`: the bit was set). One writer gets the lock next if there is one; readers are
// all woken unless the lock prefers writers and a writer was woken (they keep their bit then,
// and that writer's unlock wakes them).
void wakeAfterRelease(pthread_rwlock_t* rw, bool writersWaited) {
    const bool wokeWriter = writersWaited && arbrt::unpark(writersQueue(rw), 1) > 0;
    if (wokeWriter && prefersWriters(rw)) return;
    std::atomic<uint32_t>& word = state(rw);
    if ((word.load(std::memory_order_relaxed) & kReadersWaiting) &&
        (word.fetch_and(~kReadersWaiting, std::memory_order_relaxed) & kReadersWaiting)) {
        arbrt::unpark(readersQueue(rw), ~size_t{0});
    }
}

// One attempt to take a read lock: 0, EBUSY (blocked) or EAGAIN (too many readers).
int tryRead(pthread_rwlock_t* rw, bool writerFirst) {
    std::atomic<uint32_t>& word = state(rw);
    uint32_t s = word.load(std::memory_order_relaxed);
    for (;;) {
        if (readerBlocked(s, writerFirst)) return EBUSY;
        if (readers(s) == kMaxReaders) return EAGAIN;
        if (word.compare_exchange_weak(s, s + kOneReader, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
            return 0;
        }
    }
}

// One attempt to take the write lock; `extraBits` is kWritersWaiting for a writer that parked.
bool tryWrite(pthread_rwlock_t* rw, uint32_t extraBits) {
    std::atomic<uint32_t>& word = state(rw);
    uint32_t s = word.load(std::memory_order_relaxed);
    while (!writerBlocked(s)) {
        if (word.compare_exchange_weak(s, s | kWriteLocked | extraBits, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
            __atomic_store_n(&rw->__data.__cur_writer, selfId(), __ATOMIC_RELAXED);
            return true;
        }
    }
    return false;
}

// Sets `bit` while `blocked(state)` holds; false if the lock became available meanwhile.
template <typename Blocked>
bool announceWaiter(std::atomic<uint32_t>& word, uint32_t bit, Blocked blocked) {
    uint32_t s = word.load(std::memory_order_relaxed);
    for (;;) {
        if (!blocked(s)) return false;
        if (s & bit) return true;
        if (word.compare_exchange_weak(s, s | bit, std::memory_order_relaxed)) return true;
    }
}

// Short optimistic spin before parking: most critical sections are brief, and parking costs two
// context switches. `available` reads the state only (no cache-line ownership while spinning).
template <typename Available>
void spinBriefly(std::atomic<uint32_t>& word, Available available) {
    for (int i = 0; i < kSpinIterations; ++i) {
        if (available(word.load(std::memory_order_relaxed))) return;
        __builtin_ia32_pause();
    }
}

int readLock(pthread_rwlock_t* rw, uint64_t deadlineNs) {
    if (curWriter(rw) == selfId()) return EDEADLK;
    const bool writerFirst = prefersWriters(rw);
    int err = tryRead(rw, writerFirst);
    if (err != EBUSY) return err;
    std::atomic<uint32_t>& word = state(rw);
    auto blocked = [&](uint32_t s) { return readerBlocked(s, writerFirst); };
    spinBriefly(word, [&](uint32_t s) { return !blocked(s); });
    for (;;) {
        err = tryRead(rw, writerFirst);
        if (err != EBUSY) return err;
        if (!announceWaiter(word, kReadersWaiting, blocked)) continue;
        const auto r = arbrt::parkInterruptible(
            readersQueue(rw),
            [&] {
                const uint32_t s = word.load(std::memory_order_relaxed);
                return (s & kReadersWaiting) && blocked(s);
            },
            deadlineNs, [] { return signalInterruptPending(); });
        // The bit may stay set after a time-out: the next release clears it (a spurious unpark).
        if (r == arbrt::ParkResult::timedOut) return ETIMEDOUT;
        // Not a cancellation point: a signal's handler runs, then the wait goes on.
        if (r == arbrt::ParkResult::interrupted) runSignalHandlers();
    }
}

int writeLock(pthread_rwlock_t* rw, uint64_t deadlineNs) {
    if (curWriter(rw) == selfId()) return EDEADLK;
    if (tryWrite(rw, 0)) return 0;
    std::atomic<uint32_t>& word = state(rw);
    spinBriefly(word, [](uint32_t s) { return !writerBlocked(s); });
    uint32_t extraBits = 0;
    for (;;) {
        if (tryWrite(rw, extraBits)) return 0;
        // Announced before any time-out: a woken writer that gives up leaves the bit set, so the
        // holder's release still wakes the next writer (or the readers behind the bit).
        if (!announceWaiter(word, kWritersWaiting, writerBlocked)) continue;
        extraBits = kWritersWaiting;
        const auto r = arbrt::parkInterruptible(
            writersQueue(rw),
            [&] {
                const uint32_t s = word.load(std::memory_order_relaxed);
                return (s & kWritersWaiting) && writerBlocked(s);
            },
            deadlineNs, [] { return signalInterruptPending(); });
        if (r == arbrt::ParkResult::timedOut) {
            // Last chance, as POSIX has no time-out for a lock that is free.
            return tryWrite(rw, extraBits) ? 0 : ETIMEDOUT;
        }
        // The writers-waiting bit stays set, as after a time-out: the next release clears it.
        if (r == arbrt::ParkResult::interrupted) runSignalHandlers();
    }
}

void writeUnlock(pthread_rwlock_t* rw) {
    __atomic_store_n(&rw->__data.__cur_writer, 0, __ATOMIC_RELAXED);
    const uint32_t old =
        state(rw).fetch_and(~(kWriteLocked | kWritersWaiting), std::memory_order_release);
    if (old & (kWritersWaiting | kReadersWaiting)) wakeAfterRelease(rw, old & kWritersWaiting);
}

// The last reader out hands the lock to a waiting writer. A reader that arrives meanwhile (reader
// preference) or a writer that takes the free lock first becomes responsible instead.
void readUnlock(pthread_rwlock_t* rw) {
    std::atomic<uint32_t>& word = state(rw);
    const uint32_t old = word.fetch_sub(kOneReader, std::memory_order_release);
    if (readers(old) != 1 || !(old & kWritersWaiting)) return;
    uint32_t s = word.load(std::memory_order_relaxed);
    while (!writerBlocked(s) && (s & kWritersWaiting)) {
        if (word.compare_exchange_weak(s, s & ~kWritersWaiting, std::memory_order_relaxed)) {
            wakeAfterRelease(rw, true);
            return;
        }
    }
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
    return readLock(rw, arbrt::detail::kNoDeadline);
}

ARBRUN_EXPORT int pthread_rwlock_tryrdlock(pthread_rwlock_t* rw) {
    if (passesThrough(rw)) return ARBRUN_REAL(pthread_rwlock_tryrdlock)(rw);
    return yieldOnBusy(tryRead(rw, prefersWriters(rw)));
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
    return writeLock(rw, arbrt::detail::kNoDeadline);
}

ARBRUN_EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t* rw) {
    if (passesThrough(rw)) return ARBRUN_REAL(pthread_rwlock_trywrlock)(rw);
    return yieldOnBusy(tryWrite(rw, 0) ? 0 : EBUSY);
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
    const uint32_t s = state(rw).load(std::memory_order_relaxed);
    if (s & kWriteLocked) {
        writeUnlock(rw);
    } else if (readers(s) != 0) {
        readUnlock(rw);
    } else {
        return EPERM;
    }
    return 0;
}
