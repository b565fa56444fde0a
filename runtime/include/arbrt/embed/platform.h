// What the runtime requires of the machine, checked without starting anything: the same checks
// start() makes, exposed for diagnostics (`arbrun doctor`) so they are never written twice.
#pragma once

#include <string>

namespace arbrt {

// True when the CPU and kernel let user code write the %fs base (FSGSBASE, AT_HWCAP2 bit 1).
// Without it each context switch sets the thread pointer with arch_prctl: ~150 ns instead of ~13 ns
// on bare metal, several microseconds in some VMs (`arbrun doctor` measures it).
bool fsgsbaseAvailable();

// The running glibc's version ("2.36").
std::string glibcVersion();

// Whether the runtime's glibc layout probe accepts the running glibc (version, struct pthread
// descriptors, the TCB words the runtime uses); false with *why set when start() would refuse to
// run. Call from a thread whose TCB glibc allocated. Changes nothing.
bool glibcLayoutSupported(std::string* why);

// Whether system calls a program issues with the `syscall` instruction outside libc can be caught
// (Linux syscall user dispatch over libc's text, 5.11+); false with *why when start() would run
// without it (such calls then block their carrier until the monitor lends its core away).
bool syscallDispatchAvailable(std::string* why);

}  // namespace arbrt
