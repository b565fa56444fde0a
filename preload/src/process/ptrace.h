// ptrace under the runtime (ptrace.cc has the rules).
#pragma once

namespace arbrun {

// A ptrace system call made with the `syscall` instruction or through syscall(): -EPERM (with the
// one line) for the requests that start a trace, as libc's ptrace gets; kNotHandled
// (robust_list.h) for the others, which go to the kernel as they are.
long rawPtraceCall(const long args[6]);

}  // namespace arbrun
