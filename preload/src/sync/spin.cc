// pthread spinlocks. The lock is one int in glibc's x86-64 encoding: 1 free, 0 (or below) held;
// glibc's own lock decrements and its unlock stores 1, so a process-shared spinlock used by a
// native glibc process as well stays coherent (which is why pshared needs no pass-through here).
// A waiting user thread must not spin forever: the holder may be a runnable user thread queued
// on this very core. So it spins briefly, then yields between attempts.
#include <errno.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>

#include "arbrt/arbrt.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "signals/interrupt.h"

namespace arbrun {
namespace {

constexpr int kFree = 1, kHeld = 0;
constexpr int kSpinIterations = 100;

std::atomic<int>& word(pthread_spinlock_t* lock) {
    return *reinterpret_cast<std::atomic<int>*>(const_cast<int*>(lock));
}

bool tryAcquire(pthread_spinlock_t* lock) {
    int expected = kFree;
    return word(lock).compare_exchange_strong(expected, kHeld, std::memory_order_acquire,
                                              std::memory_order_relaxed);
}

// Lets the holder run: another user thread on this core, or (on a kernel thread) anyone.
void letOthersRun() {
    if (onUserThread()) {
        arbrt::yield();
    } else {
        ARBRUN_REAL(sched_yield)();
    }
}

// Spins on loads (no cache-line ownership) until the lock looks free or the spin budget is spent.
void spinWhileHeld(pthread_spinlock_t* lock) {
    for (int i = 0; i < kSpinIterations; ++i) {
        if (word(lock).load(std::memory_order_relaxed) > kHeld) return;
        __builtin_ia32_pause();
    }
}

}  // namespace
}  // namespace arbrun

using namespace arbrun;

ARBRUN_EXPORT int pthread_spin_init(pthread_spinlock_t* lock, int /*pshared*/) {
    word(lock).store(kFree, std::memory_order_relaxed);
    return 0;
}

ARBRUN_EXPORT int pthread_spin_destroy(pthread_spinlock_t* /*lock*/) {
    return 0;
}

// A native thread spinning here would take signals and an asynchronous cancellation at once: a
// waiter here does between its attempts (its carrier's interruption is refused inside this
// library, cancel.h).
ARBRUN_EXPORT int pthread_spin_lock(pthread_spinlock_t* lock) {
    while (!tryAcquire(lock)) {
        spinWhileHeld(lock);
        if (word(lock).load(std::memory_order_relaxed) <= kHeld) {
            letOthersRun();
            actOnAsynchronousEvents();
        }
    }
    return 0;
}

// A failing trylock yields too: programs poll it in loops (dedup), like mutex trylocks.
ARBRUN_EXPORT int pthread_spin_trylock(pthread_spinlock_t* lock) {
    if (tryAcquire(lock)) return 0;
    if (onUserThread()) arbrt::yield();
    return EBUSY;
}

ARBRUN_EXPORT int pthread_spin_unlock(pthread_spinlock_t* lock) {
    word(lock).store(kFree, std::memory_order_release);
    return 0;
}
