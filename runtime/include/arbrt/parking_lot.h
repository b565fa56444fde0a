// A parking lot: futex semantics at user level. Threads park on any address; the state that decides
// whether to park lives wherever the caller keeps it (usually in the object at that address), so
// objects stay valid when zero-filled or copied before first use, like glibc's futex-based ones.
// Waiter queues live in a fixed hash table of buckets, as in the kernel's futex table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace arbrt {

// A non-owning reference to a callable (no allocation, one indirect call): the callbacks below run
// under a bucket lock on contended paths, where std::function's overhead is not wanted.
template <typename Signature>
class FunctionRef;
template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
  public:
    template <typename F,
              typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
    FunctionRef(F&& f)  // NOLINT: implicit by design, like std::function
        : object_(const_cast<void*>(static_cast<const void*>(&f))),
          call_([](void* o, Args... a) -> R {
              return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<Args>(a)...);
          }) {}
    R operator()(Args... a) const { return call_(object_, std::forward<Args>(a)...); }

  private:
    void* object_;
    R (*call_)(void*, Args...);
};

enum class ParkResult {
    woken,        // unpark()ed (or requeued and then unparked)
    invalid,      // validate() returned false: nothing was parked
    timedOut,     // the deadline passed first
    interrupted,  // parkInterruptible() only: interrupted() became true while parked
};

// Under the lock of address's bucket, calls validate(); if it returns true, parks the caller (a
// user thread, or a kernel thread on a futex) until an unpark() on its current address matches
// `bitset`, or nowNs() reaches deadlineNs (~0: never). A timed-out waiter is unlinked before park()
// returns.
ParkResult park(const void* address, FunctionRef<bool()> validate, uint64_t deadlineNs,
                uint32_t bitset = ~0u);

// Like park(), but a user thread also stops waiting (unlinked, like a time-out) when interrupted()
// holds: it is checked once the waiter is queued, before each block and after every wake-up, so
// whoever makes it true must then wake the thread with arbrt::signal() (its next block() returns;
// the parking lot's own wake-ups use the same permit, so none is lost). Used by waits that signals
// or cancellation must interrupt (condvars, semaphores, futex waits). Kernel threads that are not
// user threads cannot be interrupted this way and wait as in park().
ParkResult parkInterruptible(const void* address, FunctionRef<bool()> validate, uint64_t deadlineNs,
                             FunctionRef<bool()> interrupted, uint32_t bitset = ~0u);

// Wakes up to `count` waiters parked on `address` whose bitset intersects `bitset`, oldest first.
// Returns how many were woken.
size_t unpark(const void* address, size_t count, uint32_t bitset = ~0u);

// FUTEX_CMP_REQUEUE: under both buckets' locks, if validate() holds, wakes up to `wakeCount`
// waiters of `from` and moves up to `requeueCount` more to `to`. Returns woken + requeued, or -1 if
// validate() failed (nothing done).
long requeue(const void* from, const void* to, size_t wakeCount, size_t requeueCount,
             FunctionRef<bool()> validate);

// Number of waiters parked on `address` (a snapshot, for tests and statistics).
size_t parkedCount(const void* address);

// A deadline that never passes (every deadline here is absolute, on nowNs()'s timeline).
constexpr uint64_t kNoDeadline = ~uint64_t{0};

namespace detail {
struct Waiter;
// parkUntilWoken() for a user thread that may be interrupted: returns true once `w` is woken, false
// when the deadline passed or interrupted() holds (checked before every block; `w` may still be
// woken later, as after a time-out). A kernel thread waits as parkUntilWoken() does.
bool parkUntilWokenOr(Waiter* w, uint64_t deadlineNs, FunctionRef<bool()> interrupted);
}  // namespace detail

}  // namespace arbrt
