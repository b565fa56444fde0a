// fork(), vfork() and pthread_atfork() in a program whose threads are user threads.
//
// fork: glibc's own fork runs the atfork handlers and resets its state in the child (malloc and
// stdio locks, its thread list, with the forking user thread's TCB as the only thread: the kernel
// writes the child's tid into it, and the robust list is registered there). The runtime's handlers
// (registered first, see fork.h) keep its locks consistent across the fork and rebuild it in the
// child, where the forking user thread continues on a fresh carrier. pthread_atfork needs no
// interposition: it is glibc's (in libc_nonshared), and handlers run on the forking user thread.
//
// vfork: a vfork child shares the parent's memory and runs on the forking user thread's stack and
// TCB until it execs; anything it calls that reaches the runtime would corrupt the parent's state.
// Under the runtime vfork is therefore fork (separate memory, working runtime in the child).
// Differences from a native vfork: the parent does not wait for the child's exec, the child's
// writes to memory are not seen by the parent, and atfork handlers run. Without the runtime it is
// the real vfork (a tail jump, so the caller's frame is the one vfork returns to twice).
// posix_spawn, system and popen use glibc's internal clone and never reach these functions.
#include "process/fork.h"

#include <pthread.h>
#include <unistd.h>

#include "arbrt/arbrt.h"
#include "arbrt/embed/fork.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "process/setxid.h"
#include "signals/signalfd.h"
#include "signals/signals.h"
#include "sync/shared_memory.h"

namespace arbrun {
namespace {

void prepare() {
    arbrt::prepareFork();
}

void parent() {
    arbrt::parentAfterFork();
}

// The resets come first, while the forking thread is the child's only one: a stale lock is never
// seen by the runtime's new threads, and the pages the resets write are copied (copy on write)
// without a TLB shoot-down. Once other threads of the child run, every such first write sends an
// inter-processor interrupt to their cpus (an exit to the hypervisor in a VM), which made up a
// fifth of a fork's cost here.
void child() {
    sharedMappingsAfterFork();
    resetSetxidAfterFork();
    resetLibraryKernelThreadsAfterFork();
    resetSignalsAfterFork();
    renewSignalfdsAfterFork();
    if (auto err = arbrt::childAfterFork(forkChildCores())) {
        logWarning("fork: cannot rebuild the user-thread runtime in the child (%s)",
                   err->message.c_str());
    }
    installSetxidHandler();  // the child's first thread may have brought glibc's handler back
    restartSignalHelperAfterFork();
}

// vfork under the runtime (see the top of the file).
pid_t forkForVfork() {
    return fork();
}

}  // namespace

void installForkHandlers() {
    pthread_atfork(prepare, parent, child);
}

}  // namespace arbrun

// Where vfork continues: fork under the runtime, else the real vfork.
extern "C" __attribute__((visibility("hidden"))) void* arbrunVforkTarget() {
    if (arbrt::isRunning()) return reinterpret_cast<void*>(&arbrun::forkForVfork);
    return arbrun::lookupReal("vfork");
}

// vfork must not return through a frame of its own (the child would clobber it for the parent), so
// it asks arbrunVforkTarget where to go and jumps there with the caller's frame untouched.
asm(R"(
    .text
    .globl vfork
    .type vfork, @function
vfork:
    .cfi_startproc
    endbr64
    subq $8, %rsp
    .cfi_adjust_cfa_offset 8
    call arbrunVforkTarget
    addq $8, %rsp
    .cfi_adjust_cfa_offset -8
    jmp *%rax
    .cfi_endproc
    .size vfork, .-vfork
)");
