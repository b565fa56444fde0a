// The ticket barrier and the semaphore word (sync_words.h), and arbrt::Barrier and
// arbrt::Semaphore over them.
#include "arbrt/sync.h"

namespace arbrt {
namespace words {
namespace {

constexpr uint32_t kDestroying = 1u << 31;  // in BarrierWords::inside while destroy waits

// Whether `completed` (rounds done, mod 2^32) has reached `target`; waiters are never 2^31 rounds
// behind.
bool reached(uint32_t completed, uint32_t target) {
    return int32_t(completed - target) >= 0;
}

// Leaves the barrier: the last thread out while destroy waits lets destroy return. After the
// decrement the object may be freed, so only its address is used (unpark does not touch it).
// Release: pairs with destroy's acquire loads, so our reads of the words happen before the free.
void leave(const BarrierWords& b) {
    if (b.inside.fetch_sub(1, std::memory_order_release) == (kDestroying | 1)) {
        unpark(&b.inside, ~size_t{0});
    }
}

}  // namespace

bool barrierWait(const BarrierWords& b, const WaitHooks* hooks) {
    // Relaxed: the ticket RMW below (acq_rel) orders it before this round's completion, which is
    // what destroy synchronises with.
    b.inside.fetch_add(1, std::memory_order_relaxed);
    // acq_rel: the round's last ticket sees every earlier arrival of the round.
    const uint64_t ticket = b.tickets.fetch_add(1, std::memory_order_acq_rel);
    const auto target = uint32_t(ticket / b.count + 1);
    const bool last = ticket % b.count == b.count - 1;
    if (last) {
        // Release: everything the round's threads did before arriving is visible to each of them
        // after they leave (their acquire loads of `completed`).
        b.completed.fetch_add(1, std::memory_order_release);
        unpark(&b.completed, ~size_t{0});
    } else {
        while (!reached(b.completed.load(std::memory_order_acquire), target)) {
            const ParkResult r = internal::parkWith(
                &b.completed,
                [&] { return !reached(b.completed.load(std::memory_order_relaxed), target); },
                kNoDeadline, hooks);
            // The round completes only when its last thread arrives: the wait goes on whatever
            // act() says.
            if (r == ParkResult::interrupted) hooks->act();
        }
    }
    leave(b);
    return last;
}

WaitStatus barrierDestroy(const BarrierWords& b) {
    if (b.tickets.load(std::memory_order_relaxed) % b.count != 0) return WaitStatus::busy;
    b.inside.fetch_or(kDestroying, std::memory_order_acquire);
    while (b.inside.load(std::memory_order_acquire) != kDestroying) {
        park(
            &b.inside, [&] { return b.inside.load(std::memory_order_relaxed) != kDestroying; },
            kNoDeadline);
    }
    b.inside.store(0, std::memory_order_relaxed);
    return WaitStatus::ok;
}

// Counts itself as a waiter, then takes a unit or parks while the value is 0 (re-checked under the
// bucket lock, which semPost's unpark also takes). An interrupted waiter stops counting itself
// before act() runs handlers (which may never return) and counts itself again if it waits on.
WaitStatus semWait(std::atomic<uint64_t>& data, uint64_t deadlineNs, const WaitHooks* hooks) {
    if (semTryWait(data)) return WaitStatus::ok;
    data.fetch_add(kSemOneWaiter, std::memory_order_relaxed);
    for (;;) {
        uint64_t d = data.load(std::memory_order_relaxed);
        if (uint32_t(d) > 0) {
            // Take a unit and stop counting as a waiter in one step. Acquire: pairs with post.
            if (data.compare_exchange_weak(d, d - 1 - kSemOneWaiter, std::memory_order_acquire,
                                           std::memory_order_relaxed)) {
                return WaitStatus::ok;
            }
            continue;
        }
        const ParkResult r = internal::parkWith(
            &data, [&] { return uint32_t(data.load(std::memory_order_relaxed)) == 0; }, deadlineNs,
            hooks);
        if (r == ParkResult::timedOut) {
            data.fetch_sub(kSemOneWaiter, std::memory_order_relaxed);
            return WaitStatus::timedOut;
        }
        if (r == ParkResult::interrupted) {
            data.fetch_sub(kSemOneWaiter, std::memory_order_relaxed);
            if (hooks->act()) return WaitStatus::interrupted;
            data.fetch_add(kSemOneWaiter, std::memory_order_relaxed);
        }
    }
}

// Release: what the poster did before happens before the taker's acquire. The RMW reads the
// waiter count in the same word the waiter incremented before reading the value.
WaitStatus semPost(std::atomic<uint64_t>& data) {
    uint64_t d = data.load(std::memory_order_relaxed);
    do {
        if (uint32_t(d) >= kSemValueMax) return WaitStatus::overflow;
    } while (!data.compare_exchange_weak(d, d + 1, std::memory_order_release,
                                         std::memory_order_relaxed));
    if (d >= kSemOneWaiter) unpark(&data, 1);
    return WaitStatus::ok;
}

}  // namespace words

Barrier::~Barrier() {
    words::barrierDestroy(words());
}

bool Barrier::wait() {
    return words::barrierWait(words(), nullptr);
}

}  // namespace arbrt
