// The register save and restore shared by the two trampolines that make an interrupted user thread
// call into the runtime in normal context (preempt.cc: yield at a safe point; syscall_dispatch.cc:
// a trapped system call). Text for a top-level asm() statement.
//
// On entry %rsp = R - 136, where R is the interrupted %rsp: the 128-byte red zone the ABI lets
// leaf code use below %rsp is stepped over, and the 8 bytes at R - 136 hold the address to resume
// at. The save pushes the flags and the 15 general registers, leaves %rbx pointing at the saved
// %r15 (R - 264) for the whole call, and saves the FP/vector state (XSAVE of every component the
// kernel enabled, or FXSAVE) 64-byte aligned below. The saved registers, from %rbx up, are
//   r15 r14 r13 r12 r11 r10 r9 r8 rbp rdi rsi rdx rcx rbx rax flags [resume address]
// (kSaved* below). Unwind information describes the frame from the save on, so an unwinder
// (cancellation, a C++ exception) crosses into the interrupted function: the CFA is R, the resume
// address at R - 136, the callee-saved registers at their push slots.
// The restore reloads everything from the save area (a call may have rewritten a slot: the
// system-call result in the %rax slot) and returns to the resume address, popping the red-zone gap.
#pragma once

#define ARBRT_TRAMPOLINE_SAVE_ASM          \
    "    pushfq\n"                         \
    "    push %rax\n"                      \
    "    push %rbx\n"                      \
    "    push %rcx\n"                      \
    "    push %rdx\n"                      \
    "    push %rsi\n"                      \
    "    push %rdi\n"                      \
    "    push %rbp\n"                      \
    "    push %r8\n"                       \
    "    push %r9\n"                       \
    "    push %r10\n"                      \
    "    push %r11\n"                      \
    "    push %r12\n"                      \
    "    push %r13\n"                      \
    "    push %r14\n"                      \
    "    push %r15\n"                      \
    "    mov %rsp, %rbx\n"                 \
    "    .cfi_def_cfa %rbx, 264\n"         \
    "    .cfi_offset %rip, -136\n"         \
    "    .cfi_offset %rbx, -160\n"         \
    "    .cfi_offset %rbp, -200\n"         \
    "    .cfi_offset %r12, -240\n"         \
    "    .cfi_offset %r13, -248\n"         \
    "    .cfi_offset %r14, -256\n"         \
    "    .cfi_offset %r15, -264\n"         \
    "    sub arbrtXsaveSize(%rip), %rsp\n" \
    "    and $-64, %rsp\n"                 \
    "    cmpb $0, arbrtUseXsave(%rip)\n"   \
    "    je 1f\n"                          \
    "    xor %eax, %eax\n"                 \
    "    mov %rax, 512(%rsp)\n"            \
    "    mov %rax, 520(%rsp)\n"            \
    "    mov %rax, 528(%rsp)\n"            \
    "    mov %rax, 536(%rsp)\n"            \
    "    mov %rax, 544(%rsp)\n"            \
    "    mov %rax, 552(%rsp)\n"            \
    "    mov %rax, 560(%rsp)\n"            \
    "    mov %rax, 568(%rsp)\n"            \
    "    mov $-1, %eax\n"                  \
    "    mov $-1, %edx\n"                  \
    "    xsave64 (%rsp)\n"                 \
    "    jmp 2f\n"                         \
    "1:  fxsave64 (%rsp)\n"                \
    "2:  cld\n"

#define ARBRT_TRAMPOLINE_RESTORE_ASM     \
    "    cmpb $0, arbrtUseXsave(%rip)\n" \
    "    je 3f\n"                        \
    "    mov $-1, %eax\n"                \
    "    mov $-1, %edx\n"                \
    "    xrstor64 (%rsp)\n"              \
    "    jmp 4f\n"                       \
    "3:  fxrstor64 (%rsp)\n"             \
    "4:  mov %rbx, %rsp\n"               \
    "    pop %r15\n"                     \
    "    pop %r14\n"                     \
    "    pop %r13\n"                     \
    "    pop %r12\n"                     \
    "    pop %r11\n"                     \
    "    pop %r10\n"                     \
    "    pop %r9\n"                      \
    "    pop %r8\n"                      \
    "    pop %rbp\n"                     \
    "    pop %rdi\n"                     \
    "    pop %rsi\n"                     \
    "    pop %rdx\n"                     \
    "    pop %rcx\n"                     \
    "    pop %rbx\n"                     \
    "    pop %rax\n"                     \
    "    popfq\n"                        \
    "    ret $128\n"

namespace arbrt::detail {

// Indexes of the saved general registers, counted in words from %rbx (see above).
enum TrampolineSlot : int {
    kSavedR15 = 0,
    kSavedR14,
    kSavedR13,
    kSavedR12,
    kSavedR11,
    kSavedR10,
    kSavedR9,
    kSavedR8,
    kSavedRbp,
    kSavedRdi,
    kSavedRsi,
    kSavedRdx,
    kSavedRcx,
    kSavedRbx,
    kSavedRax,
    kSavedFlags,
    kSavedResume
};

}  // namespace arbrt::detail
