// sigsetjmp/siglongjmp with virtual signal masks (signals.h). glibc's sigsetjmp(env, 1) saves the
// kernel thread's real mask and siglongjmp restores it; a user thread's mask is virtual, so:
// - __sigsetjmp (what the sigsetjmp macro calls) is wrapped: with savemask set, on a user thread,
//   the virtual mask is stored in a spare word of the buffer's saved mask (glibc's own sigprocmask
//   fills only the first of its sixteen words), with a marker bound to the buffer's address, and
//   the real __sigsetjmp then runs on the caller's own frame (a tail jump: it must see the
//   caller's stack and return address);
// - siglongjmp, longjmp, _longjmp and __longjmp_chk (one function in glibc) make the marked saved
//   mask the thread's virtual mask again, and restore the carrier's real mask when the jump
//   leaves a handler that ran in kernel context (prepareLongJump), then call the real one (which
//   runs pthread cleanup handlers below the target, as glibc's _longjmp_unwind does).
// Buffers set up by _setjmp/setjmp (no mask saved) leave the virtual mask alone, as natively.
#include <pthread.h>
#include <unistd.h>
#include <atomic>

#include <cstdint>
#include <cstdlib>

#include "libc/real_libc.h"
#include "libc/shim.h"
#include "signals/interrupt.h"
#include "signals/signals.h"
#include "threads/thread_state.h"

namespace {

constexpr uint64_t kMarker = 0x6172627275'6e736aULL;  // "arbrunsj"
constexpr int kMaskWord = 1, kMarkerWord = 2;         // spare words of __saved_mask
constexpr int kJmpBufRsp = 6;                         // glibc x86-64: JB_RSP, mangled

uint64_t markerFor(const __jmp_buf_tag* env) {
    return kMarker ^ reinterpret_cast<uintptr_t>(env);
}

// glibc's PTR_DEMANGLE on x86-64: rotate right by 17, then xor with the TCB's pointer guard
// (%fs:0x30; user threads carry the main thread's, glibc_tcb.h).
uintptr_t demangle(uintptr_t value) {
    uintptr_t guard;
    asm("movq %%fs:0x30, %0" : "=r"(guard));
    return ((value >> 17) | (value << 47)) ^ guard;
}

using LongJump = void (*)(__jmp_buf_tag*, int);

// What every long jump does on a user thread before the real one.
[[noreturn]] void jump(LongJump real, __jmp_buf_tag* env, int value) {
    if (arbrun::onUserThread()) {
        const bool ours =
            env->__mask_was_saved && env->__saved_mask.__val[kMarkerWord] == markerFor(env);
        const uint64_t mask = env->__saved_mask.__val[kMaskWord];
        arbrun::prepareLongJump(ours ? &mask : nullptr, demangle(env->__jmpbuf[kJmpBufRsp]));
        // glibc's siglongjmp restores a saved mask with a system call, on whose way back the kernel
        // delivers what the mask unblocks, before the jump: the same here. A program whose loop
        // is fault, handler, siglongjmp (stress-ng's sigsegv) otherwise spends almost all its time
        // inside this library, where an alert is refused, and took its SIGALRM seconds late.
        if (ours) arbrun::takeSignalsAfterCall();
    }
    real(env, value);
    __builtin_unreachable();
}

}  // namespace

extern "C" {
// The real __sigsetjmp, for the wrapper's tail jump (resolved by the first call's recording).
__attribute__((visibility("hidden"))) void* arbrunRealSigsetjmp = nullptr;

// Called by the wrapper below with the caller's arguments, before the real __sigsetjmp.
__attribute__((visibility("hidden"), used)) void arbrunRecordSigsetjmp(__jmp_buf_tag* env,
                                                                       int saveMask) {
    if (!arbrunRealSigsetjmp) {
        std::atomic_ref(arbrunRealSigsetjmp)
            .store(arbrun::lookupReal("__sigsetjmp"), std::memory_order_release);
    }
    if (!saveMask || !arbrun::onUserThread()) return;
    env->__saved_mask.__val[kMaskWord] = arbrun::currentSignalMask();
    env->__saved_mask.__val[kMarkerWord] = markerFor(env);
}
}

// int __sigsetjmp(jmp_buf env, int savemask): records, then jumps to the real one with the
// registers and stack exactly as the caller left them (it saves the caller's frame and returns
// to the caller, twice).
asm(R"(
    .text
    .p2align 4
    .globl __sigsetjmp
    .type __sigsetjmp,@function
__sigsetjmp:
    .cfi_startproc
    pushq %rdi
    .cfi_adjust_cfa_offset 8
    pushq %rsi
    .cfi_adjust_cfa_offset 8
    subq $8, %rsp
    .cfi_adjust_cfa_offset 8
    call arbrunRecordSigsetjmp
    addq $8, %rsp
    .cfi_adjust_cfa_offset -8
    popq %rsi
    .cfi_adjust_cfa_offset -8
    popq %rdi
    .cfi_adjust_cfa_offset -8
    jmp *arbrunRealSigsetjmp(%rip)
    .cfi_endproc
    .size __sigsetjmp, .-__sigsetjmp
)");

// Under their symbol names: glibc's headers declare them noreturn and nothrow, which these keep.
extern "C" ARBRUN_EXPORT void arbrunSiglongjmp(__jmp_buf_tag*, int) __asm__("siglongjmp");
extern "C" ARBRUN_EXPORT void arbrunLongjmp(__jmp_buf_tag*, int) __asm__("longjmp");
extern "C" ARBRUN_EXPORT void arbrunUnderscoreLongjmp(__jmp_buf_tag*, int) __asm__("_longjmp");
extern "C" ARBRUN_EXPORT void arbrunLongjmpChk(__jmp_buf_tag*, int) __asm__("__longjmp_chk");

void arbrunSiglongjmp(__jmp_buf_tag* env, int value) {
    static const auto real = reinterpret_cast<LongJump>(arbrun::lookupReal("siglongjmp"));
    jump(real, env, value);
}

void arbrunLongjmp(__jmp_buf_tag* env, int value) {
    static const auto real = reinterpret_cast<LongJump>(arbrun::lookupReal("longjmp"));
    jump(real, env, value);
}

void arbrunUnderscoreLongjmp(__jmp_buf_tag* env, int value) {
    static const auto real = reinterpret_cast<LongJump>(arbrun::lookupReal("_longjmp"));
    jump(real, env, value);
}

// _FORTIFY_SOURCE's longjmp. glibc's check (a jump to a frame deeper than the caller's is a
// corrupt buffer, unless it leaves the alternate signal stack) asks the kernel for the alternate
// stack, which on a user thread is virtual: a handler running on it that jumped back to the
// thread's stack was killed whenever that stack lay below the alternate one (stress-ng's
// signest, 3 runs in 10). So on a user thread the check is made here, with the virtual stack,
// and the jump is the plain one.
void arbrunLongjmpChk(__jmp_buf_tag* env, int value) {
    if (arbrun::onUserThread()) {
        static const auto plain = reinterpret_cast<LongJump>(arbrun::lookupReal("siglongjmp"));
        const uintptr_t here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
        const uintptr_t target = demangle(env->__jmpbuf[kJmpBufRsp]);
        if (target < here && !arbrun::jumpLeavesAltStack(here, target)) {
            static const char message[] =
                "*** longjmp causes uninitialized stack frame ***: terminated\n";
            (void)!write(STDERR_FILENO, message, sizeof message - 1);
            abort();
        }
        jump(plain, env, value);
    }
    static const auto real = reinterpret_cast<LongJump>(arbrun::lookupReal("__longjmp_chk"));
    jump(real, env, value);
}
