// Unnamed POSIX semaphores over the runtime's semaphore word (arbrt/sync_words.h, the algorithm
// arbrt::Semaphore uses too) and the parking lot, in glibc 2.36's x86-64 layout (struct new_sem),
// so the object means the same thing to the real libc:
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
#include "arbrt/embed/resume_point.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "sync/blocking_pass_through.h"
#include "sync/relaxed_field.h"
#include "sync/wait_hooks.h"
#include "threads/cancel.h"

namespace arbrun {
namespace {

using arbrt::words::kSemValueMax;
using arbrt::words::WaitStatus;
static_assert(kSemValueMax == SEM_VALUE_MAX);

struct Semaphore {
    std::atomic<uint64_t> data;
    int32_t futexFlags;  // glibc's `private`
    int32_t pad;
};
static_assert(sizeof(Semaphore) <= sizeof(sem_t) && offsetof(Semaphore, futexFlags) == 8);

Semaphore& layout(sem_t* s) {
    return *reinterpret_cast<Semaphore*>(s);
}

// Written by init only, before the semaphore is shared: relaxed.
bool passesThrough(sem_t* s) {
    return loadRelaxed(layout(s).futexFlags) != 0;
}

int fail(int err) {
    errno = err;
    return -1;
}

// sem_wait and friends are cancellation points: honour a pending cancellation first (glibc does
// the same), then wait. While waiting, cancellation does not return; a handler without SA_RESTART
// ends the wait (EINTR), and any handler ends a timed one (as glibc on Linux: the kernel never
// restarts a futex wait with a time-out).
int wait(sem_t* s, uint64_t deadlineNs) {
    if (cancelActionable()) actOnCancel();
    const CancellationPointHooks interruptions(deadlineNs == arbrt::kNoDeadline);
    switch (arbrt::words::semWait(layout(s).data, deadlineNs, &interruptions)) {
        case WaitStatus::ok:
            return 0;
        case WaitStatus::interrupted:
            return fail(EINTR);
        default:
            return fail(ETIMEDOUT);
    }
}

}  // namespace
}  // namespace arbrun

using namespace arbrun;

ARBRUN_EXPORT int sem_init(sem_t* s, int pshared, unsigned int initial) {
    if (initial > kSemValueMax) return fail(EINVAL);
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
    if (arbrt::words::semPost(layout(s).data) == WaitStatus::overflow) return fail(EOVERFLOW);
    return 0;
}

ARBRUN_EXPORT int sem_wait(sem_t* s) {
    ARBRT_RESUME_POINT();  // cohort dispatch groups waiters by where they resume
    if (passesThrough(s)) return asBlockingCall([&] { return ARBRUN_REAL(sem_wait)(s); });
    return wait(s, arbrt::kNoDeadline);
}

// A failing trywait lets other user threads run, like a failing mutex trylock: programs poll it.
ARBRUN_EXPORT int sem_trywait(sem_t* s) {
    if (passesThrough(s)) return ARBRUN_REAL(sem_trywait)(s);
    if (arbrt::words::semTryWait(layout(s).data)) return 0;
    if (onUserThread()) arbrt::yield();
    return fail(EAGAIN);
}

// The timespec is checked before the semaphore, as glibc does: EINVAL even when a unit is free.
ARBRUN_EXPORT int sem_timedwait(sem_t* s, const timespec* abstime) {
    ARBRT_RESUME_POINT();  // cohort dispatch groups waiters by where they resume
    if (passesThrough(s))
        return asBlockingCall([&] { return ARBRUN_REAL(sem_timedwait)(s, abstime); });
    uint64_t deadline;
    if (int err = deadlineFrom(CLOCK_REALTIME, abstime, &deadline)) return fail(err);
    return wait(s, deadline);
}

ARBRUN_EXPORT int sem_clockwait(sem_t* s, clockid_t clock, const timespec* abstime) {
    ARBRT_RESUME_POINT();  // cohort dispatch groups waiters by where they resume
    if (passesThrough(s))
        return asBlockingCall([&] { return ARBRUN_REAL(sem_clockwait)(s, clock, abstime); });
    uint64_t deadline;
    if (int err = deadlineFrom(clock, abstime, &deadline)) return fail(err);
    return wait(s, deadline);
}

ARBRUN_EXPORT int sem_getvalue(sem_t* s, int* sval) {
    if (passesThrough(s)) return ARBRUN_REAL(sem_getvalue)(s, sval);
    *sval = int(arbrt::words::semValue(layout(s).data));
    return 0;
}
