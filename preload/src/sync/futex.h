// The futex emulation (futex.cc) as the two ways a program reaches it: libc's syscall() and the
// `syscall` instruction itself (raw_syscalls.cc).
#pragma once

namespace arbrun {

// Runs syscall(SYS_futex, a[0..5]) on the runtime's parking lot (rules at the top of futex.cc).
// True, with *result (-1 with errno on failure, as syscall() returns), when the operation was one
// the emulation takes; false for those the kernel keeps (WAKE_OP, PI futexes, ...) or when the
// runtime is not running.
bool emulateFutex(long a[6], long* result);

// Whether system call `number` may add or remove shared mappings (the interposed functions are in
// mappings.cc; these are their system-call forms).
bool changesMappings(long number);

}  // namespace arbrun
