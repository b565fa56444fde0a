// What an executable's ELF file says about how it can run under arbrun: whether it is an ELF64
// program at all, whether it is dynamically linked (only then does the dynamic loader load the
// preload library into it), and whether it is a Go program (Go's runtime schedules goroutines on
// threads of its own, checks that its signal handlers run on the signal stacks it installed per
// thread and issues raw system calls: it crashes when its threads are user threads, so arbrun
// runs it natively). Shared by the launcher (the program it is about to exec) and the preload
// library (the process it was loaded into).
//
// Safe to link into a shared object loaded with LD_PRELOAD: no global state, no constructors, no
// exceptions thrown by this code. Every function may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace arbexe {

// What inspectElf() found. A plain value: copy freely.
struct ElfFacts {
    bool elf = false;      // a little-endian ELF64 file whose headers could be read
    bool dynamic = false;  // has a PT_INTERP program header: ld.so (and LD_PRELOAD) runs in it
    bool go = false;       // a Go build-id note, or a .go.buildinfo section with Go's magic
};

// Reads exactly `size` bytes at `offset` of the file into `out`; false when it cannot.
using ReadAt = std::function<bool(uint64_t offset, void* out, size_t size)>;

// Inspects an ELF image through `read`: the ELF header, the program headers (PT_INTERP, the
// notes of every PT_NOTE segment) and, when no Go note was found, the section headers and their
// names (a .go.buildinfo section, checked for Go's "\xff Go buildinf:" magic). Reads a few
// hundred bytes to a few KiB in at most six reads; bounded whatever the file claims.
ElfFacts inspectElf(const ReadAt& read);

// inspectElf() on a file. False with *error (open's strerror) when the file cannot be opened; a
// file that is not ELF64 gives true with facts->elf false.
bool inspectFile(const std::string& path, ElfFacts* facts, std::string* error);

// Whether the notes in [notes, notes + size) (a PT_NOTE segment's contents, entries padded to
// `align`: 4, or 8 for segments aligned to 8) include Go's build-id note (name "Go", type 4).
bool notesHaveGoBuildId(const void* notes, size_t size, size_t align);

// The first object loaded in this process (the executable, ld.so and the libraries loaded so
// far, in load order) whose PT_NOTE segments carry Go's build-id note, read in memory without
// system calls: its path ("" for the executable itself); nullptr when none does. Finds a Go
// executable and a Go shared library (-buildmode=c-shared) loaded at start; not a Go program
// whose build id was left empty (-ldflags=-buildid=): inspectFile("/proc/self/exe") finds that
// one by its .go.buildinfo section.
const char* loadedGoObject();

}  // namespace arbexe
