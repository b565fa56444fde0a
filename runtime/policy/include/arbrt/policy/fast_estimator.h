// The fast core estimator (Shenango's idea, NSDI '19): check every few microseconds whether a
// runnable thread has waited across two consecutive checks, and ask for one more core at once if
// so; give back a core that has stayed idle for a grace period.
//
// Exactly what it does. A sample is a check when at least periodNs have passed since the previous
// check (the first sample is one; samples in between return `hold` and are otherwise ignored, so
// the runtime may sample as often as it likes). Per core present at both checks k and k+1:
//   waited:  enqueued(k) > dequeued(k)  (threads waited at k)  and  dequeued(k+1) < enqueued(k)
//            (not all of them have left): a thread has waited at least one period.
//   idle:    between k and k+1 the core ran nothing (busy unchanged), no thread arrived and none
//            waits at k+1. A core's idle streak starts at the first check of an idle interval and
//            ends at any interval that is not idle.
// Then, with n cores in the sample:
//   - cores whose idle streak has lasted the grace -> n minus their number (coreId: the longest
//     idle), all at once: each one is provably unneeded, and giving them back one per check would
//     only delay it. The grace starts at idleGraceNs and learns from its give-backs: one followed
//     by a scale-up within kGraceTrialGraces graces was wrong (a core handed back and forth costs
//     two hand-overs where keeping it idle cost nothing), so the grace doubles, up to
//     kMaxIdleGraceScale times idleGraceNs; one that holds that long halves it again, down to
//     idleGraceNs. The trial spans several graces because a hand-over can cost more than the
//     grace itself where cores move slowly (hundreds of microseconds on a 2-vCPU VM): there
//     memcached at 5,000 requests/s beside two batch tenants asked for its second core 130 times
//     a second with a fixed 250 us grace, 98-104 times with this rule (judged within one grace
//     instead: 97-111);
//   - else, a core waited and no core was idle over the interval -> n + 1 (coreId: the core with
//     most threads waiting across the checks). A core that sat idle through the same interval
//     could not take the waiting thread (its class or affinity keeps it where it is, or stealing
//     has not run yet), so another core would sit idle too: the request waits for a check at which
//     no core idles (or for that core to be given back). Without this, threads pinned to one core
//     would draw cores up to maxCores and keep them;
//   - else, utilisation give-back (n >= 2): over a window of utilisationWindowNs on an unchanged
//   set
//     of cores in which no thread waited across two checks, the work U = sum(busy) / sum(granted)
//     * n would keep n - 1 cores below 1 - kGiveBackMargin (equivalently: the cores' summed idle
//     time exceeds one whole core's plus the margin on each of the others) -> n - 1 (reason
//     utilisationLow; measured U / (n - 1), limit 1 - kGiveBackMargin). Why: the grace rule only
//     returns a core that idled *through* the grace, so requests arriving more often than the
//     grace, spread over the cores, keep every core forever at any utilisation (two cores at 30%
//     each with a request every 80 us). The window starts at kUtilisationWindowGraces idle graces
//     (1 ms by default: a dozen such requests), restarts at each decision, each change of the
//     cores and whenever it has run its length. The margin is wider than Arachne's 9% because
//     the fast path asks for a core back as soon as one thread waits for a period, and at 91% of
//     one core requests queue most of the time. A give-back that is followed by a scale-up
//     within one window was wrong for this load (requests that spread over two cores queue on
//     one): the window doubles, up to kMaxUtilisationWindowScale times its start (64 ms by
//     default, Arachne's time scale), so such a load moves at most once per window; a give-back
//     that holds for a window halves it again;
//   - else hold the count.
// Decisions are relative to the granted count, so checks repeated while a request is in flight
// repeat it instead of compounding it; the result is clamped to [minCores, maxCores]. The first
// sample only adopts the granted count (clamped) as the count wanted.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arbrt/policy/estimator.h"

namespace arbrt::policy {

namespace detail {
class CoreHistory;
struct CoreStep;
}  // namespace detail

// Settings of the fast estimator. A plain value; check with validate() before use.
//
// Why a 250 us grace by default: a core given back and asked for again costs two arbiter round
// trips and two moves of a kernel thread between cpusets, tens of microseconds or more each, and
// the fast path asks for a core as soon as one thread waits for one period. A grace of about 25
// periods keeps a core that only idles between requests arriving every hundred microseconds or so,
// yet returns a truly idle core 200 times sooner than Arachne's 50 ms window. It must cover at
// least two checks: idleness is only seen at the check that ends an idle interval.
struct FastParams {
    CoreLimits limits;
    uint64_t periodNs = 10'000;      // [5 us, 50 ms]: Shenango checks every 5 us, Caladan 10 us
    uint64_t idleGraceNs = 250'000;  // [2 * periodNs, 60 s]
};

// The idle grace grows at most to this many times FastParams::idleGraceNs (16 ms by default) ...
constexpr uint64_t kMaxIdleGraceScale = 64;
// ... and a grace give-back is judged right once it has held for this many graces.
constexpr uint64_t kGraceTrialGraces = 4;
// The utilisation give-back's window starts at this many idle graces (1 ms by default) ...
constexpr uint64_t kUtilisationWindowGraces = 4;
// ... and doubles after each give-back that proved wrong, up to this many times its start.
constexpr uint64_t kMaxUtilisationWindowScale = 64;
// Per remaining core, the share of a core that a utilisation give-back leaves free: n - 1 cores
// must be able to run the window's work below 75% each.
constexpr double kGiveBackMargin = 0.25;

// Why `params` cannot be used ("fast estimator: check period 1 us must be in [5 us, 50 ms] ..."),
// or nullopt.
std::optional<std::string> validate(const FastParams& params);

// See the file comment. Not thread-safe (CoreEstimator).
class FastEstimator final : public CoreEstimator {
  public:
    // Throws std::invalid_argument with validate()'s message when `params` is not valid.
    explicit FastEstimator(const FastParams& params);
    ~FastEstimator() override;

    Decision onSample(const CoreSample& sample) override;
    uint64_t nextDecisionNs() const override;
    uint32_t wantedCores() const override { return wanted_; }
    // The idle grace now (FastParams::idleGraceNs, doubled and halved as give-backs prove wrong
    // or right: the file comment).
    uint64_t idleGraceNs() const { return grace_.ns(); }
    std::string_view name() const override { return "fast"; }

  private:
    static constexpr uint64_t kNotIdle = ~uint64_t{0};

    // A length that learns from the give-backs it decides (the idle grace, the utilisation
    // window): it starts at its shortest; a give-back asked back (a scale-up) within `trialSpans`
    // lengths of it proved wrong and doubles it, up to its longest; one that held that long
    // halves it, down to its shortest. The caller says when each is judged.
    class LearnedSpan {
      public:
        LearnedSpan(uint64_t shortestNs, uint64_t longestNs, uint64_t trialSpans)
            : shortestNs_(shortestNs),
              longestNs_(longestNs),
              trialSpans_(trialSpans),
              ns_(shortestNs) {}
        uint64_t ns() const { return ns_; }
        // A give-back was made at `nowNs`: its trial begins (a later one replaces it).
        void gaveBack(uint64_t nowNs);
        // Ends a trial that has lasted its length: the give-back held, and the span halves.
        void judgeHeld(uint64_t nowNs);
        // A scale-up at `nowNs` ends a trial: within its length the give-back proved wrong, and
        // the span doubles.
        void judgeAskedBack(uint64_t nowNs);

      private:
        uint64_t shortestNs_, longestNs_, trialSpans_;
        uint64_t ns_;
        bool onTrial_ = false;
        uint64_t gaveBackNs_ = 0;  // the give-back on trial
    };

    void addToWindow(const detail::CoreStep& step, bool waited);
    bool giveBackOnUtilisation(uint32_t granted, uint64_t nowNs, Decision* d);
    void restartWindow(uint64_t nowNs);

    FastParams params_;
    std::unique_ptr<detail::CoreHistory> history_;
    uint32_t wanted_;
    bool started_ = false;
    uint64_t lastNowNs_ = 0;
    uint64_t lastCheckNs_ = 0;
    // By core id: the check at which the core's current idle streak began, or kNotIdle.
    std::vector<uint64_t> idleSinceNs_;
    // The utilisation give-back's window: its start, its length (from kUtilisationWindowGraces
    // graces, on trial for one window after a utilisation give-back), and its sums over the
    // cores.
    uint64_t windowStartNs_ = 0;
    LearnedSpan window_;
    uint64_t windowGrantedNs_ = 0;
    uint64_t windowBusyNs_ = 0;
    bool windowWaited_ = false;  // a thread waited across two checks in the window
    // The idle grace (from FastParams::idleGraceNs, on trial for kGraceTrialGraces graces after a
    // grace give-back).
    LearnedSpan grace_;
};

}  // namespace arbrt::policy
