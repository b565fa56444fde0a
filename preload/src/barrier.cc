// pthread barriers on the runtime's parking lot. pthread_barrier_t is 32 bytes, 8-byte aligned;
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
#include "interrupt.h"
#include "real_libc.h"
#include "shim.h"

namespace arbrun {
namespace {

constexpr uint32_t kDestroying = 1u << 31;

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

bool passesThrough(pthread_barrier_t* b) {
    return __atomic_load_n(&layout(b).shared, __ATOMIC_RELAXED) != 0;
}

// Whether `completed` (rounds done, mod 2^32) has reached `target`; waiters are never 2^31 rounds
// behind.
bool reached(uint32_t completed, uint32_t target) {
    return int32_t(completed - target) >= 0;
}

// Leaves the barrier: the last thread out while destroy waits lets destroy return. After the
// decrement the object may be freed, so only its address is used (unpark does not touch it).
void leave(Barrier& bar) {
    if (bar.inside.fetch_sub(1, std::memory_order_release) == (kDestroying | 1)) {
        arbrt::unpark(&bar.inside, ~size_t{0});
    }
}

int wait(Barrier& bar) {
    const uint32_t count = bar.count;
    if (count == 0) return EINVAL;  // never initialised
    // Relaxed: the ticket RMW below (acq_rel) orders it before this round's completion, which is
    // what destroy synchronises with.
    bar.inside.fetch_add(1, std::memory_order_relaxed);
    const uint64_t ticket = bar.tickets.fetch_add(1, std::memory_order_acq_rel);
    const uint64_t round = ticket / count;
    const auto target = uint32_t(round + 1);
    int result = 0;
    if (ticket % count == count - 1) {
        // Release: everything the round's threads did before arriving is visible to each of
        // them after they leave.
        bar.completed.fetch_add(1, std::memory_order_release);
        arbrt::unpark(&bar.completed, ~size_t{0});
        result = PTHREAD_BARRIER_SERIAL_THREAD;
    } else {
        while (!reached(bar.completed.load(std::memory_order_acquire), target)) {
            // Not a cancellation point: a signal's handler runs, then the wait goes on.
            const auto r = arbrt::parkInterruptible(
                &bar.completed,
                [&] { return !reached(bar.completed.load(std::memory_order_relaxed), target); },
                arbrt::detail::kNoDeadline, [] { return signalInterruptPending(); });
            if (r == arbrt::ParkResult::interrupted) runSignalHandlers();
        }
    }
    leave(bar);
    return result;
}

// glibc lets a thread destroy (and free) the barrier as soon as its own wait returned, while the
// others may still be on their way out: wait for them. A round that is not complete means threads
// are blocked in it: EBUSY, as POSIX allows.
int destroy(Barrier& bar) {
    const uint32_t count = bar.count;
    if (count != 0 && bar.tickets.load(std::memory_order_relaxed) % count != 0) return EBUSY;
    bar.inside.fetch_or(kDestroying, std::memory_order_acquire);
    while (bar.inside.load(std::memory_order_acquire) != kDestroying) {
        arbrt::park(
            &bar.inside, [&] { return bar.inside.load(std::memory_order_relaxed) != kDestroying; },
            arbrt::detail::kNoDeadline);
    }
    bar.inside.store(0, std::memory_order_relaxed);
    return 0;
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
    if (passesThrough(b)) return ARBRUN_REAL(pthread_barrier_wait)(b);
    return wait(layout(b));
}
