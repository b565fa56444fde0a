// The runtime's rawSyscallHandler under this library (raw_syscalls.cc: which call goes where).
#pragma once

namespace arbrun {

// Runs system call `number` that the program issued from outside libc, on the calling user thread
// in normal context, the way its libc wrapper runs under this library. Returns the kernel's result
// (-errno on failure); errno is left as it was.
long handleRawSyscall(long number, const long args[6]);

}  // namespace arbrun
