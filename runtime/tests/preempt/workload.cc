#include "workload.h"

#include <cstring>
#include <ctime>

namespace preempt_workload {

void spinUntil(const std::atomic<bool>* stop) {
    while (!stop->load(std::memory_order_acquire)) asm volatile("pause");
}

namespace {
uint64_t monotonicNs() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}
}  // namespace

void spinFor(uint64_t ns) {
    const uint64_t deadline = monotonicNs() + ns;
    do {
        for (int i = 0; i < 2000; ++i) asm volatile("pause");
    } while (monotonicNs() < deadline);
}

uint64_t mixedWork(uint64_t seed, uint64_t iterations) {
    double a = double(seed % 1000) + 0.5, b = 1.25, c = 3.0, d = 0.75;
    double e = 1.0 / (double(seed % 7) + 2.0), f = 0.001, g = 2.5, h = 0.125;
    uint64_t x = seed | 1, y = seed * 0x9E3779B97F4A7C15ull + 1, z = 7, w = 11;
    // The recurrences above converge to fixed points (a lost value would heal itself); the sums
    // keep every step's value, so any corruption shows in the result.
    double sumA = 0, sumC = 0, sumE = 0, sumX = 0;
    for (uint64_t i = 0; i < iterations; ++i) {
        a = a * 0.999999 + b * e;
        b = b * 0.999998 + c * f;
        c = c * 0.999997 + d * g;
        d = d * 0.999996 + h * a * 1e-6;
        e = e * 0.999995 + 1e-7;
        h = h * 0.999994 + 1e-8;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        y += x ^ (y >> 3);
        z = z * 6364136223846793005ull + y;
        w ^= z + (w << 5);
        sumA += a;
        sumC += c * 1e-3;
        sumE += e * 1e3;
        sumX += double(x >> 44);
    }
    const double sum = a + b + c + d + e + f + g + h + sumA + sumC + sumE + sumX;
    uint64_t bits;
    std::memcpy(&bits, &sum, sizeof bits);
    return bits ^ x ^ y ^ z ^ w;
}

}  // namespace preempt_workload
