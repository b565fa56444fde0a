// The runtime's clock. CLOCK_MONOTONIC (vDSO) is the truth for deadlines; the TSC, calibrated
// against it, is used only where a check must be nearly free (the dispatcher's "is a timer due?"
// test), and every TSC-based decision is confirmed with nowNs() before a thread is woken.
#include <ctime>

#include "arbrt/time.h"
#include "arch.h"
#include "runtime_state.h"

namespace arbrt {
namespace detail {
namespace {

// Written by calibrateClock() before carriers start; read-only afterwards.
struct Calibration {
    uint64_t baseTsc = 0;
    uint64_t baseNs = 0;
    double nsPerTick = 1.0;
    double ticksPerNs = 1.0;
} gCal;

uint64_t monotonicNs() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
}

}  // namespace

void calibrateClock() {
    // 2 ms against CLOCK_MONOTONIC: ~1e-4 relative error, enough for a hint that is always
    // confirmed.
    const uint64_t t0 = rdtsc(), n0 = monotonicNs();
    timespec pause{0, 2'000'000};
    nanosleep(&pause, nullptr);
    const uint64_t t1 = rdtsc(), n1 = monotonicNs();
    gCal.baseTsc = t1;
    gCal.baseNs = n1;
    gCal.nsPerTick = t1 > t0 ? double(n1 - n0) / double(t1 - t0) : 1.0;
    gCal.ticksPerNs = 1.0 / gCal.nsPerTick;
}

uint64_t tscToNs(uint64_t tsc) {
    return gCal.baseNs + uint64_t(double(int64_t(tsc - gCal.baseTsc)) * gCal.nsPerTick);
}

uint64_t nsToTsc(uint64_t ns) {
    if (ns == ~uint64_t{0}) return ~uint64_t{0};
    const double delta = double(int64_t(ns - gCal.baseNs)) * gCal.ticksPerNs;
    return gCal.baseTsc + uint64_t(int64_t(delta));
}

uint64_t ticksForNs(uint64_t ns) {
    return uint64_t(double(ns) * gCal.ticksPerNs);
}

uint64_t ticksToNs(uint64_t ticks) {
    return uint64_t(double(ticks) * gCal.nsPerTick);
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
