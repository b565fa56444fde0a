// Whether an asynchronous signal interrupted this library, from the interrupted context's pc and
// the word on top of its stack: pure, so that tests can drive it (signals.cc applies it to the
// ucontext_t with the library's real code ranges and raw-syscall entry).
#pragma once

#include <cstdint>

namespace arbrun {

// The library's code, or the `syscall; ret` its raw system calls go through (`syscallEntry`, in
// libc's text once syscall user dispatch is on: arbrt/embed/raw_syscall.h) when the return address
// on top of the stack leads back into its code, unless the call in progress is the program's own
// that the library makes for it (`programSyscall`). That sequence is libc's own getpid, so the
// program's getpid() stopped on the same pc counts as the program's. `topOfStack` is read only on
// that sequence: on the `syscall` (a restarted call) or on the `ret` after it.
template <typename InLibrary>
bool interruptedInLibraryAt(uintptr_t pc, const uintptr_t* topOfStack, uintptr_t syscallEntry,
                            bool programSyscall, InLibrary inLibrary) {
    if (inLibrary(pc)) return true;
    if (!syscallEntry || (pc != syscallEntry && pc != syscallEntry + 2)) return false;
    return !programSyscall && inLibrary(*topOfStack);
}

}  // namespace arbrun
