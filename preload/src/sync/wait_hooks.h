// The WaitHooks (arbrt/sync_words.h) of the preload's waits: how signals and cancellation
// interrupt them (interrupt.h says which waits are which).
#pragma once

#include "arbrt/sync_words.h"
#include "signals/interrupt.h"

namespace arbrun {

// Waits that are not cancellation points (mutexes, rwlocks, barriers): a pending signal's handler
// runs on the waiting thread, then the wait goes on, as natively when the kernel runs a handler in
// the middle of a futex wait and restarts it.
class SignalsOnlyHooks final : public arbrt::words::WaitHooks {
  public:
    bool pending() const override { return signalInterruptPending(); }
    bool act() const override {
        runSignalHandlers();
        return false;
    }
};
inline constexpr SignalsOnlyHooks kSignalsOnly;

// Cancellation points that signals may end (sem_wait): cancellation acts (does not return); a
// handler without SA_RESTART ends the wait, and so does any handler when `honourRestart` is false
// (the kernel never restarts a futex wait with a time-out).
class CancellationPointHooks final : public arbrt::words::WaitHooks {
  public:
    explicit constexpr CancellationPointHooks(bool honourRestart) : honourRestart_(honourRestart) {}
    bool pending() const override { return interruptPending(); }
    bool act() const override { return deliverInterrupts(honourRestart_); }

  private:
    bool honourRestart_;
};

}  // namespace arbrun
