// The verbose lines the preload library prints about the platform it found, which `arbrun doctor`
// reads back from its trial run (launcher/src/doctor_system.cc). One definition for both sides:
// the launcher is linked statically (start-up), so it cannot ask the system's libc.so itself; the
// runtime, loaded into a real program, can.
#pragma once

namespace arbconfig::report {

// Each follows the "arbrun: " every line of the library starts with.

// "arbrun: runtime started with N cores ...": the runtime took over the program.
inline constexpr char kRuntimeStarted[] = "runtime started";

// "arbrun: glibc 2.36: thread layout accepted" or
// "arbrun: glibc 2.39: thread layout not supported: <the probe's reason>".
inline constexpr char kGlibc[] = "glibc ";
inline constexpr char kLayoutAccepted[] = ": thread layout accepted";
inline constexpr char kLayoutRejected[] = ": thread layout not supported: ";

// "arbrun: system calls issued outside libc are caught (syscall user dispatch)" or
// "arbrun: system calls issued outside libc are not caught: <why>".
inline constexpr char kSyscallsCaught[] = "system calls issued outside libc are caught";
inline constexpr char kSyscallsNotCaught[] = "system calls issued outside libc are not caught: ";

}  // namespace arbconfig::report
