// pthread condition variables over the runtime's sequence protocol (arbrt/sync_words.h, the one
// arbrt::CondVar uses too) and the parking lot, state kept in the object (zero = default):
//   word 0 (low half of __wseq)  sequence: bumped by every signal/broadcast; waiters park on it
//   __g_size[0]                  number of waiters (lets signal skip the parking lot when 0)
//   __wrefs                      flags, as glibc encodes them: bit 0 process-shared, bit 1
//   monotonic
// A waiter reads the sequence before releasing the mutex and parks only while it is unchanged, so a
// signal between the two is never lost. Process-shared condvars go to the real libc.
#include <errno.h>
#include <pthread.h>

#include <atomic>
#include <cstring>

#include "arbrt/arbrt.h"
#include "arbrt/embed/resume_point.h"
#include "libc/pthread_fields.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "signals/interrupt.h"
#include "sync/blocking_pass_through.h"
#include "sync/mutex_impl.h"
#include "sync/relaxed_field.h"
#include "sync/wait_hooks.h"
#include "threads/cancel.h"

namespace arbrun {
namespace {

constexpr unsigned kShared = 1, kMonotonic = 2;

std::atomic<uint32_t>& sequence(pthread_cond_t* c) {
    // The low half of __wseq (offset 0 of the object); through char* to keep strict aliasing happy.
    return *reinterpret_cast<std::atomic<uint32_t>*>(reinterpret_cast<char*>(c));
}
std::atomic<uint32_t>& waiters(pthread_cond_t* c) {
    return *reinterpret_cast<std::atomic<uint32_t>*>(&c->__data.__g_size[0]);
}
arbrt::words::CondWords words(pthread_cond_t* c) {
    return {sequence(c), waiters(c)};
}
// Written by init only, before the condvar is shared: relaxed.
unsigned flags(const pthread_cond_t* c) {
    return loadRelaxed(c->__data.__wrefs);
}

bool passesThrough(const pthread_cond_t* c) {
    return flags(c) & kShared;
}

// The cleanup routine above: re-takes the condvar's mutex.
void relock(void* m) {
    mutexLock(static_cast<pthread_mutex_t*>(m), arbrt::kNoDeadline);
}

// Links `buffer` (relock of `m`) on the thread's cleanup chain, which pthread_exit's unwinding
// and siglongjmp run, as glibc's _pthread_cleanup_push does, and unlinks it again. Inline, not
// glibc's functions: a signal landing in libc's text counts as landing in the program
// (interruptedInLibrary), so a handler run there in kernel context that left by siglongjmp
// while the buffer was half linked, or already unlinked before the mutex was re-taken, skipped
// the re-lock (the condvar's mutex was free after the jump). The signal fences keep the stores
// in order for a handler on this thread.
void pushRelock(_pthread_cleanup_buffer* buffer, pthread_mutex_t* m) {
    auto& chain = pthread_field::at<_pthread_cleanup_buffer*>(selfTcb(), pthread_field::kCleanup);
    buffer->__routine = relock;
    buffer->__arg = m;
    buffer->__prev = chain;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    chain = buffer;
    std::atomic_signal_fence(std::memory_order_seq_cst);
}

void popRelock(_pthread_cleanup_buffer* buffer) {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    pthread_field::at<_pthread_cleanup_buffer*>(selfTcb(), pthread_field::kCleanup) =
        buffer->__prev;
    std::atomic_signal_fence(std::memory_order_seq_cst);
}

int wait(pthread_cond_t* c, pthread_mutex_t* m, uint64_t deadlineNs) {
    if (mutexPassesThrough(m)) return EINVAL;  // a process-shared mutex needs a process-shared cond
    const uint32_t observed = arbrt::words::condBeginWait(words(c));
    if (int err = mutexUnlock(m)) {
        arbrt::words::condAbandonWait(words(c));
        return err;
    }
    // A cancellation point: signals and cancellation interrupt the wait (interrupt.h); the hooks'
    // pending() is what ends it, and we act below, around the mutex.
    const CancellationPointHooks interruptions(true);
    const auto r = arbrt::words::condWait(words(c), observed, deadlineNs, &interruptions);
    if (r == arbrt::words::WaitStatus::interrupted) {
        // Cancellation acts with the mutex held (cleanup handlers expect it). Signal handlers run
        // without it, as natively (they interrupt the futex wait); one that leaves by
        // pthread_exit or siglongjmp re-takes it first, through the cleanup glibc's own wait
        // registers too. Then the wait returns as a spurious wake-up.
        if (cancelActionable()) {
            mutexLock(m, arbrt::kNoDeadline);
            actOnCancel();
        }
        _pthread_cleanup_buffer relockOnExit;
        pushRelock(&relockOnExit, m);
        runSignalHandlers();
        popRelock(&relockOnExit);
    }
    // Re-lock even after a time-out, as POSIX requires; an error here means the mutex was misused.
    mutexLock(m, arbrt::kNoDeadline);
    return r == arbrt::words::WaitStatus::timedOut ? ETIMEDOUT : 0;
}

void wakeWaiters(pthread_cond_t* c, size_t count) {
    arbrt::words::condNotify(words(c), count);
}

}  // namespace
}  // namespace arbrun

using namespace arbrun;

#define COND_VERSION "GLIBC_2.3.2"

ARBRUN_EXPORT int pthread_cond_init(pthread_cond_t* c, const pthread_condattr_t* attr) {
    int pshared = PTHREAD_PROCESS_PRIVATE;
    clockid_t clock = CLOCK_REALTIME;
    if (attr) {
        pthread_condattr_getpshared(attr, &pshared);
        pthread_condattr_getclock(attr, &clock);
    }
    if (pshared == PTHREAD_PROCESS_SHARED) {
        return ARBRUN_REAL_VERSION(pthread_cond_init, COND_VERSION)(c, attr);
    }
    std::memset(c, 0, sizeof *c);
    c->__data.__wrefs = clock == CLOCK_MONOTONIC ? kMonotonic : 0;
    return 0;
}

ARBRUN_EXPORT int pthread_cond_destroy(pthread_cond_t* c) {
    if (passesThrough(c)) return ARBRUN_REAL_VERSION(pthread_cond_destroy, COND_VERSION)(c);
    return 0;
}

ARBRUN_EXPORT int pthread_cond_wait(pthread_cond_t* c, pthread_mutex_t* m) {
    ARBRT_RESUME_POINT();  // cohort dispatch groups waiters by where they resume
    if (passesThrough(c))
        return asBlockingCall(
            [&] { return ARBRUN_REAL_VERSION(pthread_cond_wait, COND_VERSION)(c, m); });
    return wait(c, m, arbrt::kNoDeadline);
}

ARBRUN_EXPORT int pthread_cond_timedwait(pthread_cond_t* c, pthread_mutex_t* m,
                                         const timespec* abstime) {
    ARBRT_RESUME_POINT();  // cohort dispatch groups waiters by where they resume
    if (passesThrough(c))
        return asBlockingCall([&] {
            return ARBRUN_REAL_VERSION(pthread_cond_timedwait, COND_VERSION)(c, m, abstime);
        });
    uint64_t deadline;
    const clockid_t clock = (flags(c) & kMonotonic) ? CLOCK_MONOTONIC : CLOCK_REALTIME;
    if (int err = deadlineFrom(clock, abstime, &deadline)) return err;
    return wait(c, m, deadline);
}

ARBRUN_EXPORT int pthread_cond_clockwait(pthread_cond_t* c, pthread_mutex_t* m, clockid_t clock,
                                         const timespec* abstime) {
    ARBRT_RESUME_POINT();  // cohort dispatch groups waiters by where they resume
    if (passesThrough(c))
        return asBlockingCall(
            [&] { return ARBRUN_REAL(pthread_cond_clockwait)(c, m, clock, abstime); });
    uint64_t deadline;
    if (int err = deadlineFrom(clock, abstime, &deadline)) return err;
    return wait(c, m, deadline);
}

ARBRUN_EXPORT int pthread_cond_signal(pthread_cond_t* c) {
    if (passesThrough(c)) return ARBRUN_REAL_VERSION(pthread_cond_signal, COND_VERSION)(c);
    wakeWaiters(c, 1);
    return 0;
}

ARBRUN_EXPORT int pthread_cond_broadcast(pthread_cond_t* c) {
    if (passesThrough(c)) return ARBRUN_REAL_VERSION(pthread_cond_broadcast, COND_VERSION)(c);
    wakeWaiters(c, ~size_t{0});
    return 0;
}
