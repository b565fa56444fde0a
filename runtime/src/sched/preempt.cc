// Preemption at safe points (rules in preempt.h): the unsafe-code ranges, the signal handler's
// checks, and the trampoline that turns an interrupted instruction stream into a call to yield.
#include "sched/preempt.h"

#include <cpuid.h>
#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>

#include "monitor/retake.h"
#include "platform/arch.h"
#include "sched/runtime_state.h"
#include "sched/trampoline_asm.h"
#include "tls/glibc_tcb.h"

// Read by the trampoline (hidden: addressed RIP-relative from position-independent code).
extern "C" {
__attribute__((visibility("hidden"))) uint64_t arbrtXsaveSize = 512;
__attribute__((visibility("hidden"))) uint8_t arbrtUseXsave = 0;
__attribute__((visibility("hidden"), used)) void arbrtPreempted(uint64_t* returnSlot);
void arbrt_preempt_trampoline();
}

// Entered instead of the interrupted instruction, with every register as it was. It steps over
// the red zone, reserves the resume slot (trampoline_asm.h: the same frame as the system-call
// trampoline), calls arbrtPreempted (which fills the slot with the interrupted address and
// yields), then restores everything and resumes there. It is a signal frame for the unwinder: the
// address in the slot is the interrupted instruction itself, not a return address after a call.
asm(R"(
    .text
    .p2align 4
    .globl arbrt_preempt_trampoline
    .hidden arbrt_preempt_trampoline
    .type arbrt_preempt_trampoline,@function
arbrt_preempt_trampoline:
    .cfi_startproc
    .cfi_signal_frame
    lea -128(%rsp), %rsp
    pushq $0
)" ARBRT_TRAMPOLINE_SAVE_ASM R"(
    lea 128(%rbx), %rdi
    call arbrtPreempted
)" ARBRT_TRAMPOLINE_RESTORE_ASM R"(
    .cfi_endproc
    .size arbrt_preempt_trampoline, .-arbrt_preempt_trampoline
)");

namespace arbrt::detail {
namespace {

// Executable ranges where a thread must not be preempted. Append-only (a range of an unloaded
// object stays: harmless, only conservative): the monitor appends, then publishes the count with
// release; the signal handler reads the count with acquire, then the ranges.
struct UnsafeRange {
    std::atomic<uintptr_t> begin{0}, end{0};
};
constexpr int kMaxUnsafeRanges = 64;
// While an earlier preemption request is still unhandled, a new signal is sent at most this often
// (requestPreemption): bounds the real-time signals that queue up on a descheduled carrier.
constexpr uint64_t kResendNs = 20'000'000;
UnsafeRange gUnsafe[kMaxUnsafeRanges];
std::atomic<int> gUnsafeCount{0};
std::atomic<uint64_t> gPreemptions{0};
std::atomic<void (*)()> gResumeHook{nullptr};
uint64_t gLoadsSeen = 0;  // dl_iterate_phdr's load count at the last scan (monitor-only, and init)

// Objects whose code may hold locks the runtime cannot see, or must not be re-entered. The vDSO
// (clock_gettime, gettimeofday) is called from inside the runtime and libc, with their locks held
// (a timer's deadline is converted under its core's timer lock): a thread switched out there would
// leave that lock held, and every carrier spinning for it (a hang seen once in ~250 runs of the
// semaphore compat program on a loaded host). Boost.Context (when linked as a shared library) is
// the context switch itself: inside jump_fcontext the stack pointer already belongs to the next
// thread while the carrier still runs the previous one, and a preemption there saved one thread's
// registers as another's (stress-ng --pthread: user stacks and carrier stacks overwritten).
constexpr const char* kUnsafeObjects[] = {"libc.so",     "ld-linux",      "libstdc++.so",
                                          "libgcc_s.so", "libunwind",     "libpthread.so",
                                          "libdl.so",    "linux-vdso.so", "libboost_context"};

bool unsafeByName(const char* path) {
    const char* base = std::strrchr(path, '/');
    base = base ? base + 1 : path;
    for (const char* prefix : kUnsafeObjects) {
        if (std::strncmp(base, prefix, std::strlen(prefix)) == 0) return true;
    }
    return false;
}

void addUnsafeRange(uintptr_t begin, uintptr_t end) {
    const int n = gUnsafeCount.load(std::memory_order_relaxed);
    for (int i = 0; i < n; ++i) {
        if (gUnsafe[i].begin.load(std::memory_order_relaxed) == begin) return;  // known
    }
    if (n == kMaxUnsafeRanges) return;
    gUnsafe[n].begin.store(begin, std::memory_order_relaxed);
    gUnsafe[n].end.store(end, std::memory_order_relaxed);
    gUnsafeCount.store(n + 1, std::memory_order_release);
}

// One loaded object: its executable segments are unsafe if it is a listed library or the object
// that contains the runtime itself (the preload library, or a program linked with the runtime).
int scanObject(dl_phdr_info* info, size_t, void*) {
    gLoadsSeen = info->dlpi_adds;
    const auto self = reinterpret_cast<uintptr_t>(&initPreemption);
    bool unsafe = info->dlpi_name && unsafeByName(info->dlpi_name);
    for (int pass = 0; pass < 2; ++pass) {
        for (int i = 0; i < info->dlpi_phnum; ++i) {
            const ElfW(Phdr)& ph = info->dlpi_phdr[i];
            if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
            const uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
            const uintptr_t end = begin + ph.p_memsz;
            if (pass == 0) {
                unsafe |= self >= begin && self < end;
            } else if (unsafe) {
                addUnsafeRange(begin, end);
            }
        }
    }
    return 0;
}

// The current load count (stops at the first object: cheap).
int readLoads(dl_phdr_info* info, size_t, void* out) {
    *static_cast<uint64_t*>(out) = info->dlpi_adds;
    return 1;
}

void refreshUnsafeRanges() {
    uint64_t loads = 0;
    dl_iterate_phdr(readLoads, &loads);
    if (loads != gLoadsSeen) dl_iterate_phdr(scanObject, nullptr);
}

bool inUnsafeCode(uintptr_t pc) {
    const int n = gUnsafeCount.load(std::memory_order_acquire);
    for (int i = 0; i < n; ++i) {
        if (pc >= gUnsafe[i].begin.load(std::memory_order_relaxed) &&
            pc < gUnsafe[i].end.load(std::memory_order_relaxed)) {
            return true;
        }
    }
    return false;
}

// XSAVE saves every state component the kernel enabled (XCR0); its area size comes from CPUID
// leaf 0xD. Without OSXSAVE, FXSAVE's 512 bytes cover x87/SSE.
void detectFpState() {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE)) return;
    if (!__get_cpuid_count(0xD, 0, &a, &b, &c, &d) || b < 576) return;
    arbrtXsaveSize = b;
    arbrtUseXsave = 1;
}

// The runtime's own handler, when it owns the signal (RuntimeOptions::installPreemptHandler).
void onOwnPreemptSignal(int, siginfo_t*, void* context) {
    onPreemptSignal(context);
}

std::once_flag gInitOnce;

}  // namespace

void initSafePoints() {
    std::call_once(gInitOnce, [] { dl_iterate_phdr(scanObject, nullptr); });
}

// 0: not known, 1: being found, 2: known. The finder's plain stores are published by its release
// of 2; a handler arriving meanwhile waits (two CPUID instructions) with acquire loads, so that
// the trampoline's plain reads see the values. Handlers never wait for anything else here.
namespace {
std::atomic<uint8_t> gFpStateKnown{0};
}  // namespace

void ensureFpStateKnown() {
    if (gFpStateKnown.load(std::memory_order_acquire) == 2) return;
    uint8_t expected = 0;
    if (gFpStateKnown.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
        detectFpState();
        gFpStateKnown.store(2, std::memory_order_release);
        return;
    }
    while (gFpStateKnown.load(std::memory_order_acquire) != 2) cpuRelax();
}

void initPreemption() {
    initSafePoints();
    const RuntimeOptions& o = gRuntime->options;
    if (o.preemptSignal != 0 && o.installPreemptHandler) {
        struct sigaction sa {};
        sa.sa_sigaction = onOwnPreemptSignal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(o.preemptSignal, &sa, nullptr);
    }
}

namespace {
// Signals the embedding layer blocks on carriers for flood control (embed/threads.h): whether a
// carrier blocks them says nothing about a handler. Only ever gains bits (a relaxed read that
// misses a bit just added takes a preemption for a handler: it is refused, and asked again).
std::atomic<uint64_t> gHeldSignals{0};
}  // namespace

void noteCarrierHeldSignal(int sig) {
    gHeldSignals.fetch_or(uint64_t{1} << (sig - 1), std::memory_order_relaxed);
}

bool atCarrierBaseMask(const Carrier* c, uint64_t mask) {
    return ((mask ^ c->baseSigmask) & ~gHeldSignals.load(std::memory_order_relaxed)) == 0;
}

void recordCarrierSignalMask(Carrier* c) {
    uint64_t mask = 0;
    rawSyscall(SYS_rt_sigprocmask, SIG_BLOCK, 0, reinterpret_cast<long>(&mask), sizeof mask);
    c->baseSigmask = mask;
}

void requestPreemption(Core* core, uint64_t switches, uint64_t flags) {
    RuntimeState& rt = *gRuntime;
    if (rt.options.preemptSignal == 0) return;
    refreshUnsafeRanges();
    Carrier* c = core->carrier.load(std::memory_order_acquire);
    if (!c || !c->nativeTcb) return;
    const int tid = GlibcTcb::userThreadId(c->nativeTcb);  // a kernel thread's: its tid
    // +1: zero means "no request". Release: pairs with the handler's exchange.
    const uint64_t pending =
        core->preemptRequest.exchange((switches + 1) | flags, std::memory_order_acq_rel);
    // A request still pending means its signal has not been handled yet: the carrier is not
    // running (a loaded host deschedules it) or is busy in a handler. The preemption signal is a
    // real-time signal, so every tgkill queues one more, and the handler runs with SA_NODEFER:
    // a carrier that came back after 100 ms with one signal queued per look took them nested,
    // each frame on top of the last, and overflowed its stack. The pending signal's handler will
    // read the request just stored; another is sent only if that one seems lost (the carrier
    // that got it was moved off the core before handling it), at most every kResendNs.
    const uint64_t now = rdtsc();
    if (pending != 0 &&
        now - core->preemptSignalTsc.load(std::memory_order_relaxed) < ticksForNs(kResendNs)) {
        return;
    }
    core->preemptSignalTsc.store(now, std::memory_order_relaxed);
    // Raw (sys.h): under the preload library, libc's syscall() is interposed. A failed send (the
    // carrier exited meanwhile) leaves the request pending: the next look re-sends after kResendNs.
    sysCall(SYS_tgkill, rawSyscall(SYS_getpid), tid, rt.options.preemptSignal);
}

bool isUnsafeForPreemption(uintptr_t pc) {
    return inUnsafeCode(pc);
}

uint64_t preemptionCount() {
    return gPreemptions.load(std::memory_order_relaxed);
}

}  // namespace arbrt::detail

using namespace arbrt::detail;

// On the preempted thread, right after the handler returned, below its red zone: tell the
// trampoline where to return, then yield as if the thread had called sched_yield.
void arbrtPreempted(uint64_t* returnSlot) {
    ThreadContext* self = currentContext();
    *returnSlot = self->preemptedPc;
    if (self->hookOnly) {
        self->hookOnly = false;  // interruptAtSafePoint: only the hook, no switch
    } else {
        gPreemptions.fetch_add(1, std::memory_order_relaxed);
        switchAway(self, AfterSwitch::requeue);
    }
    if (auto hook = gResumeHook.load(std::memory_order_acquire)) hook();
}

namespace arbrt {

void setPreemptResumeHook(void (*hook)()) {
    gResumeHook.store(hook, std::memory_order_release);
}

namespace {

// Whether the signal interrupted a handler of the program's rather than its normal flow: the mask
// then differs from the carrier's base mask, and switching out would strand the handler's frame.
bool interruptedInHandler(const Carrier* c, const ucontext_t* uc) {
    uint64_t interruptedMask;
    std::memcpy(&interruptedMask, &uc->uc_sigmask, sizeof interruptedMask);
    return !atCarrierBaseMask(c, interruptedMask);
}

// Makes the signal return into the preemption trampoline instead of the interrupted code, unless
// that code must not switch (inUnsafeCode); false then. Async-signal-safe.
bool redirectToTrampoline(ThreadContext* t, ucontext_t* uc) {
    const auto pc = uintptr_t(uc->uc_mcontext.gregs[REG_RIP]);
    if (inUnsafeCode(pc)) return false;
    t->preemptedPc = pc;
    ensureFpStateKnown();
    uc->uc_mcontext.gregs[REG_RIP] = greg_t(reinterpret_cast<uintptr_t>(&arbrt_preempt_trampoline));
    return true;
}

}  // namespace

// Async-signal-safe: memory reads and writes only. A request is consumed whatever the outcome, so
// a refused one (unsafe code, stale) is not acted on later by surprise; the monitor asks again.
bool onPreemptSignal(void* ucontext) {
    if (!gRuntime) return false;
    Carrier* c = currentCarrier();
    if (!c || !c->core) return false;
    Core* core = c->core;
    const uint64_t request = core->preemptRequest.exchange(0, std::memory_order_acq_rel);
    if (request == 0) return false;
    ThreadContext* t = currentContext();
    if (!t || t->carrier != c || core->carrier.load(std::memory_order_relaxed) != c) return true;
    if (core->contextSwitches.load(std::memory_order_relaxed) + 1 != (request & ~kRetakeRequest)) {
        return true;  // stale
    }
    auto* uc = static_cast<ucontext_t*>(ucontext);
    if (interruptedInHandler(c, uc)) return true;
    if (request & kRetakeRequest) {
        redirectForRetake(core, ucontext);  // asleep in a system call, whoever's code made it
        return true;
    }
    redirectToTrampoline(t, uc);  // refused in unsafe code: the monitor asks again
    return true;
}

// Async-signal-safe, like onPreemptSignal, whose safe-point checks it repeats; a thread that the
// same signal already sent into the trampoline (a preemption) runs the hook after its yield.
bool interruptAtSafePoint(void* ucontext) {
    if (!gRuntime) return false;
    Carrier* c = currentCarrier();
    if (!c || !c->core) return false;
    ThreadContext* t = currentContext();
    if (!t || t->carrier != c) return false;
    auto* uc = static_cast<ucontext_t*>(ucontext);
    const auto pc = uintptr_t(uc->uc_mcontext.gregs[REG_RIP]);
    if (pc == reinterpret_cast<uintptr_t>(&arbrt_preempt_trampoline)) return true;
    if (interruptedInHandler(c, uc) || !redirectToTrampoline(t, uc)) return false;
    t->hookOnly = true;  // read by arbrtPreempted, after this handler has returned
    return true;
}

}  // namespace arbrt
