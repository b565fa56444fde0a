// The runtime's clock. CLOCK_MONOTONIC (vDSO) is the truth for deadlines; the TSC, calibrated
// against it, is used only where a check must be nearly free (the dispatcher's "is a timer due?"
// test), and every TSC-based decision is confirmed with nowNs() before a thread is woken. A
// deadline is turned into a TSC reading relative to the present (nsToTsc), so the rate's error
// never accumulates with the process's age.
#include <atomic>
#include <ctime>

#include "arbrt/time.h"
#include "platform/arch.h"
#include "sched/runtime_state.h"

namespace arbrt {
namespace detail {
namespace {

// The TSC rate against CLOCK_MONOTONIC. The base sample is written by calibrateClock() before
// carriers start and read-only afterwards; the rates are refined by the monitor
// (refineClockRate) and read by any thread (relaxed: each is one word, and a reader mixing an old
// and a new rate is off by the refinement, parts per million).
// `spanNs` is the CLOCK_MONOTONIC span the current rate was measured over (written with the rate,
// by the same threads; read only by refineClockRate, on the monitor).
struct Calibration {
    uint64_t baseTsc = 0;
    uint64_t baseNs = 0;
    uint64_t spanNs = 0;
    std::atomic<double> nsPerTick{1.0};
    std::atomic<double> ticksPerNs{1.0};
} gCal;

// The start-up calibration's span. Bracketed samples make it short: over 40 calibrations of
// 250 us on a 2-vCPU VM at load average 30, the worst rate was 43 ppm off the rate over a second
// (a 10 ms sleep late by 0.4 us at worst). 100 us is at worst about 2.5 times that error, only
// until the monitor's first refinement (refineClockRate, as soon as it starts, then after 7 spans),
// and the preload begins it before its own start-up work, so that it usually costs no sleep at
// all. It was a 2 ms nanosleep (half of arbrun's start-up), then a 250 us one.
constexpr uint64_t kCalibrationSpanNs = 100'000;
// Each refinement waits until the span would grow this many times, and at most this long.
constexpr uint64_t kRefineGrowth = 8;
constexpr uint64_t kRefinePeriodNs = 1'000'000'000;

uint64_t monotonicNs() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
}

// A (TSC, CLOCK_MONOTONIC) pair read as close together as this machine allows: the clock read is
// bracketed by two TSC reads and the tightest of a few tries kept, its TSC the bracket's middle.
// An unbracketed pair can be microseconds apart (an interrupt, a VM exit between the reads), which
// over a 2 ms calibration is a rate error of 0.1% or more: deadlines then drift by a millisecond
// per second of sleep.
struct ClockSample {
    uint64_t tsc, ns;
};
ClockSample sampleClock() {
    ClockSample best{0, 0};
    uint64_t bestWidth = ~uint64_t{0};
    for (int i = 0; i < 8; ++i) {
        const uint64_t before = rdtsc();
        const uint64_t ns = monotonicNs();
        const uint64_t after = rdtsc();
        if (after >= before && after - before < bestWidth) {
            bestWidth = after - before;
            best = {before + (after - before) / 2, ns};
        }
    }
    return best;
}

void setRate(double nsPerTick) {
    gCal.nsPerTick.store(nsPerTick, std::memory_order_relaxed);
    gCal.ticksPerNs.store(1.0 / nsPerTick, std::memory_order_relaxed);
}

}  // namespace

ClockCalibration beginClockCalibration() {
    const ClockSample first = sampleClock();
    return ClockCalibration{first.tsc, first.ns};
}

void finishClockCalibration(const ClockCalibration& begun) {
    const uint64_t elapsed = monotonicNs() - begun.ns;
    if (elapsed < kCalibrationSpanNs) {
        // Sleeps the rest of the span (the samples are bracketed: a late wake-up costs nothing
        // but time).
        const uint64_t rest = kCalibrationSpanNs - elapsed;
        timespec pause{0, long(rest)};
        nanosleep(&pause, nullptr);
    }
    const ClockSample second = sampleClock();
    gCal.baseTsc = second.tsc;
    gCal.baseNs = second.ns;
    gCal.spanNs = second.ns - begun.ns;
    setRate(second.tsc > begun.tsc ? double(second.ns - begun.ns) / double(second.tsc - begun.tsc)
                                   : 1.0);
}

namespace {
// Written and read only by the thread that starts the runtime, before and in start() (embed/host.h
// says so); a zero `ns` means none was recorded.
ClockCalibration gEarly{0, 0};
}  // namespace

void recordEarlyClockCalibration() {
    gEarly = beginClockCalibration();
}

ClockCalibration takeEarlyClockCalibration() {
    const ClockCalibration early = gEarly;
    gEarly = {0, 0};
    return early.ns != 0 ? early : beginClockCalibration();
}

void calibrateClock() {
    finishClockCalibration(beginClockCalibration());
}

// The longer the baseline, the smaller the error of the two samples relative to it; it also
// follows CLOCK_MONOTONIC's NTP slewing (up to 500 ppm), which the TSC does not see. The span
// grows kRefineGrowth-fold per refinement (2 ms, 16 ms, 128 ms, ... after start-up), then the
// rate is refreshed every kRefinePeriodNs.
uint64_t refineClockRate() {
    const ClockSample now = sampleClock();
    const uint64_t span = now.ns > gCal.baseNs ? now.ns - gCal.baseNs : 0;
    if (now.tsc > gCal.baseTsc && span > gCal.spanNs) {
        setRate(double(span) / double(now.tsc - gCal.baseTsc));
        gCal.spanNs = span;
    }
    const uint64_t wait = gCal.spanNs * (kRefineGrowth - 1);
    return now.ns + (wait < kRefinePeriodNs ? wait : kRefinePeriodNs);
}

uint64_t tscToNs(uint64_t tsc) {
    return gCal.baseNs + uint64_t(double(int64_t(tsc - gCal.baseTsc)) *
                                  gCal.nsPerTick.load(std::memory_order_relaxed));
}

// Anchored at the present, not at the calibration: a rate error then costs its share of the time
// left until the deadline (a microsecond on a 1 ms sleep), not of the process's age.
uint64_t nsToTsc(uint64_t ns) {
    if (ns == ~uint64_t{0}) return ~uint64_t{0};
    const uint64_t tscNow = rdtsc();
    const uint64_t nsNow = monotonicNs();
    if (ns <= nsNow) return tscNow;  // due: any reading not after now
    const double ahead = double(ns - nsNow) * gCal.ticksPerNs.load(std::memory_order_relaxed);
    constexpr double kFar = double(uint64_t{1} << 62);
    return ahead >= kFar ? ~uint64_t{0} - 1 : tscNow + uint64_t(ahead);
}

uint64_t ticksForNs(uint64_t ns) {
    return uint64_t(double(ns) * gCal.ticksPerNs.load(std::memory_order_relaxed));
}

uint64_t ticksToNs(uint64_t ticks) {
    return uint64_t(double(ticks) * gCal.nsPerTick.load(std::memory_order_relaxed));
}

}  // namespace detail

uint64_t nowNs() {
    return detail::monotonicNs();
}

bool deadlineToNs(clockid_t clock, const timespec& deadline, uint64_t* out) {
    if (deadline.tv_nsec < 0 || deadline.tv_nsec >= 1'000'000'000 || deadline.tv_sec < 0)
        return false;
    const uint64_t target = uint64_t(deadline.tv_sec) * 1'000'000'000 + uint64_t(deadline.tv_nsec);
    if (clock == CLOCK_MONOTONIC) {
        *out = target;
        return true;
    }
    if (clock != CLOCK_REALTIME) return false;
    // Realtime deadlines are converted once, at wait time (like a relative timeout taken then).
    timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    const uint64_t realNow = uint64_t(now.tv_sec) * 1'000'000'000 + uint64_t(now.tv_nsec);
    const uint64_t mono = detail::monotonicNs();
    *out = target <= realNow ? mono : mono + (target - realNow);
    return true;
}

}  // namespace arbrt
