// How long an idle core polls before its carrier sleeps, learnt from the core's recent idle gaps
// (the time from going idle to finding work). Polling pays only when work comes back within the
// poll budget: then the wake-up (a futex wake, a kernel context switch, tens of microseconds of
// latency) is saved. When work comes back later, every poll is CPU burnt for nothing — a server
// under light load (memcached at 5,000 requests/s) spent six times its native CPU that way with a
// fixed 50 us poll. So the core keeps a score of how often a full poll would have caught the work,
// whatever it actually did this time (a short probe followed by a sleep still measures the gap),
// and polls the whole budget only while the score says a poll usually pays; otherwise it probes
// briefly, which still catches immediate hand-offs (a thread woken by the one that just parked).
// Work that was a readiness event (found by the netpoll, io_poller.cc) is recorded as not caught:
// the netpolling carrier takes it with one wake-up, as natively, so it never warrants a poll; so
// is a thread the netpoll or a timer made runnable that this core then steals or finds queued
// (hold/resolve).
// The probe is learnt the same way, with a lower bar: it stays while at least one gap in eight
// would have been caught by it, and is dropped otherwise (the carrier sleeps at once). A server
// whose threads are woken by the network only (memcached at 5,000 requests/s) spent ~3 us of
// probing per request, about a tenth of its CPU under arbrun, for hand-offs that never came.
//
// Pure and owner-only: one instance per core, touched only by the carrier running that core's
// dispatcher (idle() in carrier.cc), so plain fields suffice.
#pragma once

#include <cstdint>

namespace arbrt::detail {

class IdleSpinLearner {
  public:
    // Score scale: kFull means every recent gap was within the budget.
    static constexpr uint32_t kFull = 256;
    // A full poll while at least this share of recent gaps was caught by it (1/2: a wake-up costs
    // the carrier about as much CPU as a few microseconds of polling, and the latency it adds is
    // what polling exists to save).
    static constexpr uint32_t kPollThreshold = kFull / 2;
    // Weight of the newest gap: 1/8, so a change of load pattern is learnt within ~8 idle periods.
    static constexpr uint32_t kShift = 3;
    // The probe is this fraction of the budget (50 us -> ~3 us).
    static constexpr uint32_t kProbeDivisor = 16;
    // The probe stays while at least this share of recent gaps was within it (1/8: a probe costs
    // a sixteenth of a full poll, so it pays when it saves a wake-up that often).
    static constexpr uint32_t kProbeThreshold = kFull / 8;

    // The poll budget for the idle period starting now, given the configured budget: the full
    // poll, the probe, or 0 (look once, then sleep).
    uint64_t budget(uint64_t fullTicks) const {
        if (score_ >= kPollThreshold) return fullTicks;
        return probeScore_ >= kProbeThreshold ? fullTicks / kProbeDivisor : 0;
    }

    // Records one idle period: `gapTicks` from going idle until work was found, `foundWork`
    // false when the period ended without work (a timer budget ran out, a spurious wake-up).
    void record(uint64_t gapTicks, bool foundWork, uint64_t fullTicks) {
        update(&score_, foundWork && gapTicks <= fullTicks);
        update(&probeScore_, foundWork && gapTicks <= fullTicks / kProbeDivisor);
    }

    // An idle period that ended with a thread to run is a hand-off only if another thread made
    // that one runnable, not an event (readiness, a timer: ThreadContext::eventWake), which is
    // known once the dispatcher picks it: a thread the netpoll readied and this core then steals
    // or finds queued is network work as surely as the one the netpoll hands over directly, and a
    // timer's due time is known, so the sleep until it is as precise as a poll. Counted as
    // hand-offs, such periods kept a server's cores polling between its requests for nothing
    // (memcached at 5,000 requests/s, bench/idle-cpu). So such a period is held until the thread
    // is known (resolve). A period held while another is pending resolves the older one as a
    // hand-off (its work was taken by another core, or was not a thread: a release request).
    void hold(uint64_t gapTicks, uint64_t fullTicks) {
        if (held_) resolve(false);
        heldGap_ = gapTicks;
        heldFullTicks_ = fullTicks;
        held_ = true;
    }

    // Records the held period, if any: caught unless an event made the thread that ended it
    // runnable.
    void resolve(bool eventWake) {
        if (!held_) return;
        held_ = false;
        record(heldGap_, !eventWake, heldFullTicks_);
    }

    bool holding() const { return held_; }
    uint32_t score() const { return score_; }
    uint32_t probeScore() const { return probeScore_; }

  private:
    // score += (sample - score) / 8, in unsigned arithmetic; the sample is kFull or 0.
    static void update(uint32_t* score, bool caught) {
        const uint32_t sample = caught ? kFull : 0;
        if (sample >= *score) {
            *score += (sample - *score) >> kShift;
        } else {
            *score -= (*score - sample + (1u << kShift) - 1) >> kShift;
        }
    }

    // Start polling: no gap seen yet, and hand-offs are common at start.
    uint32_t score_ = kFull;
    uint32_t probeScore_ = kFull;
    // The period waiting for resolve() (hold()).
    uint64_t heldGap_ = 0;
    uint64_t heldFullTicks_ = 0;
    bool held_ = false;
};

}  // namespace arbrt::detail
