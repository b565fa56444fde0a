// Unnamed POSIX semaphores on the runtime's parking lot, in glibc 2.36's x86-64 layout (struct
// new_sem), so the object means the same thing to the real libc:
//   bytes 0-7   data: value in the low 32 bits, number of waiters in the high 32 bits; waiters
//               park on its address
//   bytes 8-11  `private`, in glibc's internal futex encoding: 0 private (handled here), 128
//               (FUTEX_SHARED) process-shared: sem_init(pshared=1) and every named semaphore
//               (sem_open), which go to the real libc (they live in memory other processes use)
// A waiter counts itself in `nwaiters` before it reads the value, and post increments the value
// with a read-modify-write on the same 64-bit word, so a post either sees the waiter (and unparks
// one) or happens before the waiter's read; the parking lot re-checks the value under its bucket
// lock, so no wake-up is lost in between.
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>

#include <atomic>
#include <climits>
#include <cstddef>

#include "arbrt/arbrt.h"
#include "blocking_pass_through.h"
#include "cancel.h"
#include "interrupt.h"
#include "real_libc.h"
#include "shim.h"

namespace arbrun {
namespace {

constexpr uint64_t kOneWaiter = uint64_t{1} << 32;
constexpr uint32_t kMaxValue = SEM_VALUE_MAX;

struct Semaphore {
    std::atomic<uint64_t> data;
    int32_t futexFlags;  // glibc's `private`
    int32_t pad;
};
static_assert(sizeof(Semaphore) <= sizeof(sem_t) && offsetof(Semaphore, futexFlags) == 8);

Semaphore& layout(sem_t* s) {
    return *reinterpret_cast<Semaphore*>(s);
}

bool passesThrough(sem_t* s) {
    return __atomic_load_n(&layout(s).futexFlags, __ATOMIC_RELAXED) != 0;
}

uint32_t value(uint64_t data) {
    return uint32_t(data);
}

int fail(int err) {
    errno = err;
    return -1;
}

// Takes one unit if there is one (acquire: pairs with post's release).
bool tryTake(Semaphore& sem) {
    uint64_t d = sem.data.load(std::memory_order_relaxed);
    while (value(d) > 0) {
        if (sem.data.compare_exchange_weak(d, d - 1, std::memory_order_acquire,
                                           std::memory_order_relaxed)) {
            return true;
        }
    }
    return false;
}

// Blocks until a unit is taken or nowNs() reaches deadlineNs: 0 or ETIMEDOUT.
int waitSlow(Semaphore& sem, uint64_t deadlineNs) {
    sem.data.fetch_add(kOneWaiter, std::memory_order_relaxed);
    for (;;) {
        uint64_t d = sem.data.load(std::memory_order_relaxed);
        if (value(d) > 0) {
            // Take a unit and stop counting as a waiter in one step.
            if (sem.data.compare_exchange_weak(d, d - 1 - kOneWaiter, std::memory_order_acquire,
                                               std::memory_order_relaxed)) {
                return 0;
            }
            continue;
        }
        const auto r = arbrt::parkInterruptible(
            &sem.data, [&] { return value(sem.data.load(std::memory_order_relaxed)) == 0; },
            deadlineNs, [] { return interruptPending(); });
        if (r == arbrt::ParkResult::timedOut) {
            sem.data.fetch_sub(kOneWaiter, std::memory_order_relaxed);
            return ETIMEDOUT;
        }
        if (r == arbrt::ParkResult::interrupted) {
            // Cancellation does not return; a handler without SA_RESTART ends the wait (EINTR),
            // and any handler ends a timed one (as glibc on Linux: the kernel never restarts a
            // futex wait with a time-out).
            sem.data.fetch_sub(kOneWaiter, std::memory_order_relaxed);
            if (deliverInterrupts(deadlineNs == arbrt::detail::kNoDeadline)) return EINTR;
            sem.data.fetch_add(kOneWaiter, std::memory_order_relaxed);
        }
    }
}

// sem_wait and friends are cancellation points: honour a pending cancellation first (glibc does
// the same), then wait.
int wait(sem_t* s, uint64_t deadlineNs) {
    if (cancelActionable()) actOnCancel();
    Semaphore& sem = layout(s);
    if (tryTake(sem)) return 0;
    const int err = waitSlow(sem, deadlineNs);
    return err ? fail(err) : 0;
}

int post(Semaphore& sem) {
    uint64_t d = sem.data.load(std::memory_order_relaxed);
    do {
        if (value(d) >= kMaxValue) return EOVERFLOW;
    } while (!sem.data.compare_exchange_weak(d, d + 1, std::memory_order_release,
                                             std::memory_order_relaxed));
    if (d >= kOneWaiter) arbrt::unpark(&sem.data, 1);
    return 0;
}

}  // namespace
}  // namespace arbrun

using namespace arbrun;

ARBRUN_EXPORT int sem_init(sem_t* s, int pshared, unsigned int initial) {
    if (initial > kMaxValue) return fail(EINVAL);
    if (pshared != 0) return ARBRUN_REAL(sem_init)(s, pshared, initial);
    Semaphore& sem = layout(s);
    sem.data.store(initial, std::memory_order_relaxed);
    sem.futexFlags = 0;
    sem.pad = 0;
    return 0;
}

ARBRUN_EXPORT int sem_destroy(sem_t* s) {
    if (passesThrough(s)) return ARBRUN_REAL(sem_destroy)(s);
    return 0;
}

ARBRUN_EXPORT int sem_post(sem_t* s) {
    if (passesThrough(s)) return ARBRUN_REAL(sem_post)(s);
    const int err = post(layout(s));
    return err ? fail(err) : 0;
}

ARBRUN_EXPORT int sem_wait(sem_t* s) {
    if (passesThrough(s)) return asBlockingCall([&] { return ARBRUN_REAL(sem_wait)(s); });
    return wait(s, arbrt::detail::kNoDeadline);
}

// A failing trywait lets other user threads run, like a failing mutex trylock: programs poll it.
ARBRUN_EXPORT int sem_trywait(sem_t* s) {
    if (passesThrough(s)) return ARBRUN_REAL(sem_trywait)(s);
    if (tryTake(layout(s))) return 0;
    if (onUserThread()) arbrt::yield();
    return fail(EAGAIN);
}

// The timespec is checked before the semaphore, as glibc does: EINVAL even when a unit is free.
ARBRUN_EXPORT int sem_timedwait(sem_t* s, const timespec* abstime) {
    if (passesThrough(s))
        return asBlockingCall([&] { return ARBRUN_REAL(sem_timedwait)(s, abstime); });
    uint64_t deadline;
    if (int err = deadlineFrom(CLOCK_REALTIME, abstime, &deadline)) return fail(err);
    return wait(s, deadline);
}

ARBRUN_EXPORT int sem_clockwait(sem_t* s, clockid_t clock, const timespec* abstime) {
    if (passesThrough(s))
        return asBlockingCall([&] { return ARBRUN_REAL(sem_clockwait)(s, clock, abstime); });
    uint64_t deadline;
    if (int err = deadlineFrom(clock, abstime, &deadline)) return fail(err);
    return wait(s, deadline);
}

ARBRUN_EXPORT int sem_getvalue(sem_t* s, int* sval) {
    if (passesThrough(s)) return ARBRUN_REAL(sem_getvalue)(s, sval);
    *sval = int(value(layout(s).data.load(std::memory_order_relaxed)));
    return 0;
}
