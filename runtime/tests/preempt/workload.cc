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

long rawSyscall3(long number, long a, long b, long c) {
    long ret;
    register long r10 asm("r10") = 0;  // the unused arguments are zero, not stale registers
    register long r8 asm("r8") = 0;
    register long r9 asm("r9") = 0;
    asm volatile("syscall"
                 : "=a"(ret)
                 : "a"(number), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                 : "rcx", "r11", "memory");
    return ret;
}

int rawSyscallClobbers(long number, uint64_t seed) {
    // [0, 44): the values (16 xmm registers, then 12 general ones); [44]: the call's number;
    // [45]: where the registers go afterwards.
    alignas(16) uint64_t in[46], out[44];
    for (int i = 0; i < 44; ++i) in[i] = seed * 0x9E3779B97F4A7C15ull + uint64_t(i);
    in[44] = uint64_t(number);
    in[45] = reinterpret_cast<uint64_t>(out);
    uint64_t* block = in;
    // Everything but %rcx (the block) and %rsp is loaded; %rbp is saved on the stack around it.
    asm volatile(
        "movdqu 0(%%rcx), %%xmm0\n\t movdqu 16(%%rcx), %%xmm1\n\t"
        "movdqu 32(%%rcx), %%xmm2\n\t movdqu 48(%%rcx), %%xmm3\n\t"
        "movdqu 64(%%rcx), %%xmm4\n\t movdqu 80(%%rcx), %%xmm5\n\t"
        "movdqu 96(%%rcx), %%xmm6\n\t movdqu 112(%%rcx), %%xmm7\n\t"
        "movdqu 128(%%rcx), %%xmm8\n\t movdqu 144(%%rcx), %%xmm9\n\t"
        "movdqu 160(%%rcx), %%xmm10\n\t movdqu 176(%%rcx), %%xmm11\n\t"
        "movdqu 192(%%rcx), %%xmm12\n\t movdqu 208(%%rcx), %%xmm13\n\t"
        "movdqu 224(%%rcx), %%xmm14\n\t movdqu 240(%%rcx), %%xmm15\n\t"
        "lea -128(%%rsp), %%rsp\n\t"  // the red zone: this function's locals may live there
        "push %%rbp\n\t"
        "push 360(%%rcx)\n\t"
        "mov 352(%%rcx), %%rax\n\t"
        "mov 256(%%rcx), %%rbx\n\t mov 264(%%rcx), %%rdx\n\t mov 272(%%rcx), %%rsi\n\t"
        "mov 280(%%rcx), %%rdi\n\t mov 288(%%rcx), %%rbp\n\t mov 296(%%rcx), %%r8\n\t"
        "mov 304(%%rcx), %%r9\n\t mov 312(%%rcx), %%r10\n\t mov 320(%%rcx), %%r12\n\t"
        "mov 328(%%rcx), %%r13\n\t mov 336(%%rcx), %%r14\n\t mov 344(%%rcx), %%r15\n\t"
        "syscall\n\t"
        "pop %%rax\n\t"
        "movdqu %%xmm0, 0(%%rax)\n\t movdqu %%xmm1, 16(%%rax)\n\t"
        "movdqu %%xmm2, 32(%%rax)\n\t movdqu %%xmm3, 48(%%rax)\n\t"
        "movdqu %%xmm4, 64(%%rax)\n\t movdqu %%xmm5, 80(%%rax)\n\t"
        "movdqu %%xmm6, 96(%%rax)\n\t movdqu %%xmm7, 112(%%rax)\n\t"
        "movdqu %%xmm8, 128(%%rax)\n\t movdqu %%xmm9, 144(%%rax)\n\t"
        "movdqu %%xmm10, 160(%%rax)\n\t movdqu %%xmm11, 176(%%rax)\n\t"
        "movdqu %%xmm12, 192(%%rax)\n\t movdqu %%xmm13, 208(%%rax)\n\t"
        "movdqu %%xmm14, 224(%%rax)\n\t movdqu %%xmm15, 240(%%rax)\n\t"
        "mov %%rbx, 256(%%rax)\n\t mov %%rdx, 264(%%rax)\n\t mov %%rsi, 272(%%rax)\n\t"
        "mov %%rdi, 280(%%rax)\n\t mov %%rbp, 288(%%rax)\n\t mov %%r8, 296(%%rax)\n\t"
        "mov %%r9, 304(%%rax)\n\t mov %%r10, 312(%%rax)\n\t mov %%r12, 320(%%rax)\n\t"
        "mov %%r13, 328(%%rax)\n\t mov %%r14, 336(%%rax)\n\t mov %%r15, 344(%%rax)\n\t"
        "pop %%rbp\n\t"
        "lea 128(%%rsp), %%rsp"
        : "+c"(block)
        :
        : "rax", "rbx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
          "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
          "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "memory");
    int differ = 0;
    for (int i = 0; i < 44; ++i) differ += in[i] != out[i];
    return differ;
}

}  // namespace preempt_workload
