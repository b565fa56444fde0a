// arbrun's fast start: `arbrun [--standalone] -- program args` handled before glibc has started.
//
// Every `arbrun -- cmd` is two process starts, arbrun's and the program's. arbrun is statically
// linked, so its start is glibc's own: CPU features, then the cache sizes leaf by leaf, 68 CPUID
// instructions, each a trap to the hypervisor in a virtual machine (6.6 us apiece on a 2-vCPU
// KVM guest: 0.5 ms, more than half of what arbrun added to /bin/true). So arbrun's ELF entry
// point is arbrunEntry (fast_start.cc), not glibc's _start: for the common invocation it finds the
// preload library and the program with raw system calls, adds LD_PRELOAD (and ARBRUN_STANDALONE)
// to the environment and execs the program; anything else (other options, a subcommand, an
// ARBRUN_* variable or LD_PRELOAD already set, a program that is not a dynamically linked ELF
// file, any failure) goes on to _start and the full launcher, which parses, checks and reports as
// it always has. The fast path decides nothing the full launcher would decide differently: it
// leaves unset the ARBRUN_* variables the full launcher would set to their defaults (the preload
// library reads an unset variable as its default), and the tests compare the two configurations.
//
// Freestanding: this code runs before glibc's start-up and, in the static-pie arbrun, before the
// executable's own relocations are applied. So it calls no libc function (not even memcpy: its
// object file must have no undefined symbol, which the build checks), uses no TLS (no stack
// protector), reads no global data but string literals (no pointer that needs a relocation), and
// keeps its paths and the new environment in one anonymous mapping, not on the stack, which
// RLIMIT_STACK may make small.
// The full launcher uses the same functions for the same answers (findProgram, joinRelative,
// programKind), so the two paths cannot drift apart.
#pragma once

#include <cstddef>

namespace arbfast {

// A path in a fixed buffer: no allocation before glibc's start. `text` is NUL-terminated.
constexpr size_t kPathCapacity = 4096;
struct Path {
    char text[kPathCapacity];
    size_t size;
};

// The file execvp() runs for `name`: `name` itself when it contains a '/'; else the first entry
// of `searchPath` (the PATH value; null or empty: glibc's default "/bin:/usr/bin"; an empty entry
// is the current directory) naming a regular file the caller may execute. False when there is
// none, or the name is empty or too long.
bool findProgram(const char* name, const char* searchPath, Path* out);

// The directory of the absolute path `file` joined with the relative path `relative`, lexically
// normalised as std::filesystem's lexically_normal() does (empty and "." components dropped,
// ".." removing the component before it, never above the root). False when `file` is not absolute
// or the path does not fit in a Path on the way (its directory, then each component added).
bool joinRelative(const char* file, const char* relative, Path* out);

// What the file at `path` is to the fast start: only a dynamically linked ELF64 program (one with
// a PT_INTERP program header) loads the preload library.
enum class ProgramKind {
    unreadable,      // cannot be opened or read
    notElf64,        // not a little-endian ELF64 file (a script, another architecture)
    staticProgram,   // ELF64 without PT_INTERP: LD_PRELOAD does nothing in it
    dynamicProgram,  // ELF64 with PT_INTERP
};
ProgramKind programKind(const char* path);

// Where an installed arbrun finds the preload library, relative to its own directory (fixed when
// arbrun is built from the install directories: bindir to the private library directory, e.g.
// "../lib/arbrun/libarbrun.so"), and where a build tree keeps it ("../lib/libarbrun.so").
const char* installedPreloadRelPath();
constexpr const char* kBuildTreePreloadRelPath = "../lib/libarbrun.so";

// The fast start itself, given the process's initial stack (argc, argv..., 0, envp..., 0). Returns
// only when the invocation is not one it handles, or when anything fails (the full launcher then
// does the same work and reports what went wrong); on success the program has replaced arbrun.
extern "C" void arbrunFastStart(long* initialStack);

}  // namespace arbfast
