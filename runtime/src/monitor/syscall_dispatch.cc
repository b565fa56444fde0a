// Syscall user dispatch (rules in syscall_dispatch.h): the set-up, the SIGSYS handler and the
// trampoline that turns a trapped system call into a call of the embedder's handler.
#include "monitor/syscall_dispatch.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>

#include <atomic>
#include <cstring>

#include "monitor/retake.h"
#include "platform/arch.h"
#include "sched/preempt.h"
#include "sched/runtime_state.h"
#include "sched/trampoline_asm.h"
#include "tls/libc_text.h"

extern "C" {
// The runtime's own `syscall; ret` (arbrt/embed/raw_syscall.h), used until libc's is known.
void arbrt_own_syscall_return();
__attribute__((visibility("hidden"))) void* arbrtSyscallEntry =
    reinterpret_cast<void*>(&arbrt_own_syscall_return);
__attribute__((visibility("hidden"), used)) void arbrtSyscallTrapped(uint64_t* saved);
void arbrt_syscall_trampoline();
}

asm(R"(
    .text
    .p2align 4
    .globl arbrt_own_syscall_return
    .hidden arbrt_own_syscall_return
    .type arbrt_own_syscall_return,@function
arbrt_own_syscall_return:
    syscall
    ret
    .size arbrt_own_syscall_return, .-arbrt_own_syscall_return
)");

// Entered instead of the instruction after the trapped `syscall`, with every register as the
// program left it (%rax: the call's number) and %rsp = R - 136 (trampoline_asm.h), the handler
// having written the resume address at R - 136. Unlike the preemption trampoline this is an
// ordinary call frame for the unwinder: the resume address follows the `syscall` instruction.
asm(R"(
    .text
    .p2align 4
    .globl arbrt_syscall_trampoline
    .hidden arbrt_syscall_trampoline
    .type arbrt_syscall_trampoline,@function
arbrt_syscall_trampoline:
    .cfi_startproc
    .cfi_def_cfa_offset 136
    .cfi_offset %rip, -136
)" ARBRT_TRAMPOLINE_SAVE_ASM R"(
    mov %rbx, %rdi
    call arbrtSyscallTrapped
)" ARBRT_TRAMPOLINE_RESTORE_ASM R"(
    .cfi_endproc
    .size arbrt_syscall_trampoline, .-arbrt_syscall_trampoline
)");

namespace arbrt::detail {
namespace {

constexpr int kSetSyscallDispatch = 59;  // PR_SET_SYSCALL_USER_DISPATCH
constexpr int kDispatchOn = 1;           // PR_SYS_DISPATCH_ON
constexpr int kUserDispatchCode = 2;     // SYS_USER_DISPATCH, SIGSYS's si_code

// Written once at start-up, before any carrier starts (thread creation orders it before their
// reads).
LibcText gLibc;
bool gEnabled = false;
std::atomic<uint64_t> gTrapped{0};

// The calls that must run at their own instruction: they start a thread or process on the
// caller's registers and (for threads) a new stack, which the trampoline cannot give them.
bool runsInPlace(long number) {
    return number == SYS_clone || number == SYS_clone3 || number == SYS_fork || number == SYS_vfork;
}

}  // namespace

// A later runtime of the same process (a fork child's) finds everything as the first one left
// it: libc's text has not moved, the kernel is the same and the safe points are known. Checking
// again was about a twentieth of a fork child's time (dl_iterate_phdr, a symbol lookup, two prctl
// calls and the page faults of the code they run).
bool initSyscallDispatch(std::string* why) {
    if (gEnabled) return true;
    if (!findLibcText(&gLibc, why) || !kernelHasSyscallDispatch(gLibc, why)) return false;
    initSafePoints();  // unsafe code ranges (the FP state size: ensureFpStateKnown)
    arbrtSyscallEntry = reinterpret_cast<void*>(gLibc.syscallReturn);
    gEnabled = true;
    return true;
}

void enableSyscallDispatch(Carrier* c) {
    // gEnabled outlives a runtime (libc's text does not move); a later runtime may not want it.
    if (!gEnabled || !gRuntime->options.rawSyscallHandler) return;
    c->syscallSelector.store(kSyscallsTrapped, std::memory_order_relaxed);
    rawSyscall(SYS_prctl, kSetSyscallDispatch, kDispatchOn, long(gLibc.begin),
               long(gLibc.end - gLibc.begin), reinterpret_cast<long>(&c->syscallSelector));
}

void enterSyscallTrampoline(void* ucontext, uintptr_t resumePc) {
    ensureFpStateKnown();  // the trampoline reserves and saves that much
    greg_t* r = static_cast<ucontext_t*>(ucontext)->uc_mcontext.gregs;
    const uint64_t sp = uint64_t(r[REG_RSP]) - 136;  // below the red zone, one slot
    *reinterpret_cast<uint64_t*>(sp) = resumePc;
    r[REG_RSP] = greg_t(sp);
    r[REG_RIP] = greg_t(reinterpret_cast<uintptr_t>(&arbrt_syscall_trampoline));
}

bool syscallDispatchEnabled() {
    return gEnabled;
}

uint64_t trappedSyscallCount() {
    return gTrapped.load(std::memory_order_relaxed);
}

}  // namespace arbrt::detail

using namespace arbrt::detail;

// On the thread, in normal context, right after a handler sent it here: the SIGSYS handler (the
// embedder's handler runs the call; it may park, switch carriers, or run signal handlers), or the
// preemption handler for a retake (the call is re-issued as a blocking call, retake.h). The call's
// number is in the saved %rax, its arguments in the saved argument registers; the result replaces
// %rax.
void arbrtSyscallTrapped(uint64_t* saved) {
    const long args[6] = {long(saved[kSavedRdi]), long(saved[kSavedRsi]), long(saved[kSavedRdx]),
                          long(saved[kSavedR10]), long(saved[kSavedR8]),  long(saved[kSavedR9])};
    const long number = long(saved[kSavedRax]);
    ThreadContext* self = currentContext();
    if (self->preemptedPc == kReissueBlocking) {
        self->preemptedPc = 0;
        saved[kSavedRax] = uint64_t(reissueAsBlockingCall(number, args));
        return;
    }
    saved[kSavedRax] = uint64_t(gRuntime->options.rawSyscallHandler(number, args));
}

namespace arbrt {

// Async-signal-safe: register and memory reads and writes, and at most the trapped call itself.
bool syscallDispatchActive() {
    return gEnabled && gRuntime && gRuntime->options.rawSyscallHandler;
}

bool onSyscallDispatchSignal(siginfo_t* info, void* ucontext) {
    if (info->si_code != kUserDispatchCode) return false;
    auto* uc = static_cast<ucontext_t*>(ucontext);
    greg_t* r = uc->uc_mcontext.gregs;
    const long number = info->si_syscall;  // the kernel also rolled %rax back to it
    gTrapped.fetch_add(1, std::memory_order_relaxed);
    Carrier* c = gRuntime ? currentCarrier() : nullptr;
    if (c && runsInPlace(number)) {
        c->syscallSelector.store(kSyscallsAllowed, std::memory_order_relaxed);  // until a switch
        r[REG_RAX] = number;
        r[REG_RIP] -= 2;  // back onto the 2-byte `syscall`
        return true;
    }
    ThreadContext* t = currentContext();
    uint64_t interruptedMask;
    std::memcpy(&interruptedMask, &uc->uc_sigmask, sizeof interruptedMask);
    const auto pc = uintptr_t(r[REG_RIP]);
    const bool mayDispatch = c && t && t->carrier == c && atCarrierBaseMask(c, interruptedMask) &&
                             gRuntime->options.rawSyscallHandler && !isUnsafeForPreemption(pc);
    if (!mayDispatch) {
        r[REG_RAX] = rawSyscall(number, r[REG_RDI], r[REG_RSI], r[REG_RDX], r[REG_R10], r[REG_R8],
                                r[REG_R9]);
        return true;
    }
    enterSyscallTrampoline(uc, pc);
    return true;
}

}  // namespace arbrt
