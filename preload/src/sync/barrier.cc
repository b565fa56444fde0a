// pthread barriers over the runtime's ticket barrier (arbrt/sync_words.h, the algorithm
// arbrt::Barrier uses too) and the parking lot. pthread_barrier_t is 32 bytes, 8-byte aligned;
// glibc 2.36 uses the first 20 (in, current_round, count, shared, out). We keep `count` and
// `shared` where glibc has them and use the rest as:
//   bytes 0-7    tickets: arrivals since init (64-bit, over glibc's `in` and `current_round`);
//                arrival t belongs to round t / count and is the round's last if t % count ==
//                count - 1
//   bytes 8-11   count (glibc's `count`)
//   bytes 12-15  shared, glibc's encoding: 0 private; 128 (glibc's FUTEX_SHARED) process-shared,
//                handled by the real libc
//   bytes 16-19  rounds completed (glibc's `out`), modulo 2^32; waiters park on its address
//   bytes 20-23  threads inside pthread_barrier_wait, plus kDestroying while destroy waits
// Tickets make the barrier reusable at once and let more than `count` threads call wait at the
// same time (they simply belong to the next round), as glibc allows. Rounds can complete out of
// order then, which is fine: a round's tickets are all handed out before the next round's first.
#include <errno.h>
#include <pthread.h>

#include <atomic>
#include <climits>
#include <cstddef>
#include <cstring>

#include "arbrt/arbrt.h"
#include "arbrt/embed/resume_point.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "sync/relaxed_field.h"
#include "sync/wait_hooks.h"

namespace arbrun {
namespace {

// The fields above, at their byte offsets.
struct Barrier {
    std::atomic<uint64_t> tickets;
    uint32_t count;
    uint32_t shared;
    std::atomic<uint32_t> completed;
    std::atomic<uint32_t> inside;
};
static_assert(sizeof(Barrier) <= sizeof(pthread_barrier_t));
static_assert(offsetof(Barrier, count) == 8 && offsetof(Barrier, shared) == 12 &&
              offsetof(Barrier, completed) == 16);

Barrier& layout(pthread_barrier_t* b) {
    return *reinterpret_cast<Barrier*>(b);
}

// Written by init only, before the barrier is shared: relaxed.
bool passesThrough(pthread_barrier_t* b) {
    return loadRelaxed(layout(b).shared) != 0;
}

// The words the shared algorithm works on; `count` is nonzero.
arbrt::words::BarrierWords words(Barrier& bar) {
    return {bar.tickets, bar.count, bar.completed, bar.inside};
}

// Not a cancellation point: a signal's handler runs while waiting, then the wait goes on.
int wait(Barrier& bar) {
    if (bar.count == 0) return EINVAL;  // never initialised
    return arbrt::words::barrierWait(words(bar), &kSignalsOnly) ? PTHREAD_BARRIER_SERIAL_THREAD : 0;
}

// A round that is not complete means threads are blocked in it: EBUSY, as POSIX allows. Otherwise
// waits for the last round's threads to leave wait() (sync_words.h). A barrier never initialised
// (count 0) has nobody inside.
int destroy(Barrier& bar) {
    if (bar.count == 0) return 0;
    return arbrt::words::barrierDestroy(words(bar)) == arbrt::words::WaitStatus::busy ? EBUSY : 0;
}

}  // namespace
}  // namespace arbrun

using namespace arbrun;

ARBRUN_EXPORT int pthread_barrier_init(pthread_barrier_t* b, const pthread_barrierattr_t* attr,
                                       unsigned int count) {
    if (count == 0 || count > INT_MAX) return EINVAL;
    int pshared = PTHREAD_PROCESS_PRIVATE;
    if (attr) pthread_barrierattr_getpshared(attr, &pshared);
    if (pshared == PTHREAD_PROCESS_SHARED) return ARBRUN_REAL(pthread_barrier_init)(b, attr, count);
    std::memset(b, 0, sizeof *b);
    layout(b).count = count;
    return 0;
}

ARBRUN_EXPORT int pthread_barrier_destroy(pthread_barrier_t* b) {
    if (passesThrough(b)) return ARBRUN_REAL(pthread_barrier_destroy)(b);
    return destroy(layout(b));
}

ARBRUN_EXPORT int pthread_barrier_wait(pthread_barrier_t* b) {
    ARBRT_RESUME_POINT();  // cohort dispatch groups waiters by where they resume
    if (passesThrough(b)) return ARBRUN_REAL(pthread_barrier_wait)(b);
    return wait(layout(b));
}
