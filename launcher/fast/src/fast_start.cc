// arbrun's fast start (fast_start.h): freestanding code that runs before glibc's start-up.
#include "arbfast/fast_start.h"

#include <arbexe/elf_header.h>

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

// arbrun's ELF entry point (the build links it with -e arbrunEntry). The kernel enters with the
// initial stack at %rsp (16-byte aligned) and %rdx zero; ld.so, for the dynamically linked arbrun
// of the sanitizer build, enters with its finaliser in %rdx. Both are handed to glibc's _start
// unchanged when the fast start returns. No frame of its own survives: _start begins as if the
// kernel had entered it.
asm(R"(
    .text
    .globl arbrunEntry
    .hidden arbrunEntry
    .type arbrunEntry, @function
arbrunEntry:
    .cfi_startproc
    .cfi_undefined rip
    endbr64
    push %rdx
    lea 8(%rsp), %rdi
    sub $8, %rsp
    call arbrunFastStart
    add $8, %rsp
    pop %rdx
    jmp _start
    .cfi_endproc
    .size arbrunEntry, .-arbrunEntry
)");

namespace arbfast {
namespace {

// What the fast start needs beyond a few hundred bytes of stack, in one anonymous mapping: the
// process's stack can be as small as RLIMIT_STACK makes it (`ulimit -s 32` runs a glibc program,
// and a 45 KiB frame here crashed), and no allocator is usable before glibc's start-up. The new
// environment's pointers follow the structure.
struct Scratch {
    Path self;
    Path library;
    Path program;
    Path preload;
};

// One system call by the `syscall` instruction: the result, -errno on failure. (arbrun's own
// process is never under syscall user dispatch, and glibc's wrappers are not usable yet.)
long sys(long n, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) {
    long ret;
    register long r10 asm("r10") = d;
    register long r8 asm("r8") = e;
    register long r9 asm("r9") = f;
    asm volatile("syscall"
                 : "=a"(ret)
                 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                 : "rcx", "r11", "memory");
    return ret;
}

size_t length(const char* s) {
    size_t n = 0;
    while (s[n]) ++n;
    return n;
}

bool same(const char* a, const char* b) {
    while (*a && *a == *b) ++a, ++b;
    return *a == *b;
}

bool startsWith(const char* s, const char* prefix) {
    while (*prefix && *s == *prefix) ++s, ++prefix;
    return *prefix == '\0';
}

bool contains(const char* s, char c) {
    for (; *s; ++s) {
        if (*s == c) return true;
    }
    return false;
}

void clear(Path* out) {
    out->size = 0;
    out->text[0] = '\0';
}

// Appends s[0, n); false (the path unchanged) when it would not fit with its NUL.
bool append(Path* out, const char* s, size_t n) {
    if (n >= kPathCapacity - out->size) return false;
    for (size_t i = 0; i < n; ++i) out->text[out->size + i] = s[i];
    out->size += n;
    out->text[out->size] = '\0';
    return true;
}

// Appends the components of s[0, n) to the normalised absolute path in `out` ("" standing for
// the root), each as "/name": empty and "." components are dropped, ".." removes the last one.
bool appendComponents(Path* out, const char* s, size_t n) {
    size_t i = 0;
    while (i < n) {
        size_t end = i;
        while (end < n && s[end] != '/') ++end;
        const size_t size = end - i;
        if (size == 2 && s[i] == '.' && s[i + 1] == '.') {
            while (out->size > 0 && out->text[--out->size] != '/') {
            }
            out->text[out->size] = '\0';
        } else if (size != 0 && !(size == 1 && s[i] == '.')) {
            if (!append(out, "/", 1) || !append(out, s + i, size)) return false;
        }
        i = end + 1;
    }
    return true;
}

bool statPath(const char* path, struct stat* st) {
    return sys(SYS_newfstatat, AT_FDCWD, reinterpret_cast<long>(path), reinterpret_cast<long>(st),
               0) == 0;
}

bool isRegularFile(const char* path) {
    struct stat st;
    return statPath(path, &st) && S_ISREG(st.st_mode);
}

// What execvp() accepts: a regular file the caller may execute (access(2)'s X_OK, real ids, as
// the full launcher's check always did).
bool isExecutableFile(const char* path) {
    return isRegularFile(path) && sys(SYS_access, reinterpret_cast<long>(path), X_OK) == 0;
}

// Reads exactly `size` bytes at `offset`; EINTR retried.
bool readAt(long fd, uint64_t offset, void* out, size_t size) {
    auto* to = static_cast<char*>(out);
    while (size > 0) {
        const long n = sys(SYS_pread64, fd, reinterpret_cast<long>(to), long(size), long(offset));
        if (n == -EINTR) continue;
        if (n <= 0) return false;
        to += n;
        size -= size_t(n);
        offset += uint64_t(n);
    }
    return true;
}

// Whether `path` is absolute and already in normal form (what the full launcher would make of an
// ARBRUN_PRELOAD_LIB value is then the value itself) and fits in LD_PRELOAD (no ':' or ' ').
// `room` holds the normal form meanwhile (a Path on this stack would be 4 KiB of it).
bool isPlainAbsolutePath(const char* path, Path* room) {
    if (path[0] != '/' || contains(path, ':') || contains(path, ' ')) return false;
    clear(room);
    return appendComponents(room, path, length(path)) && same(room->text, path);
}

// The library the full launcher would pick (preload_library.h: the override, else the first of
// the installed and the build tree's places that exists), when it would accept it: a regular file
// whose path LD_PRELOAD can carry. False otherwise: the full launcher then says what is wrong.
// `self` is room for arbrun's own path (or the override's normal form).
bool findLibrary(const char* override, Path* self, Path* out) {
    clear(out);
    if (override && *override) {
        return isPlainAbsolutePath(override, self) && isRegularFile(override) &&
               append(out, override, length(override));
    }
    const long n = sys(SYS_readlink, reinterpret_cast<long>("/proc/self/exe"),
                       reinterpret_cast<long>(self->text), long(kPathCapacity));
    if (n <= 0 || size_t(n) >= kPathCapacity) return false;
    self->size = size_t(n);
    self->text[self->size] = '\0';
    for (int candidate = 0; candidate < 2; ++candidate) {
        const char* relative =
            candidate == 0 ? installedPreloadRelPath() : kBuildTreePreloadRelPath;
        if (!joinRelative(self->text, relative, out)) return false;
        struct stat st;
        if (!statPath(out->text, &st)) continue;
        return S_ISREG(st.st_mode) && !contains(out->text, ':') && !contains(out->text, ' ');
    }
    return false;
}

}  // namespace

// Set by the build from the install directories (launcher/CMakeLists.txt); the fallback is the
// default GNU layout's.
const char* installedPreloadRelPath() {
#ifdef ARBRUN_INSTALL_PRELOAD_RELPATH
    return ARBRUN_INSTALL_PRELOAD_RELPATH;
#else
    return "../lib/arbrun/libarbrun.so";
#endif
}

bool findProgram(const char* name, const char* searchPath, Path* out) {
    clear(out);
    if (!*name) return false;
    const size_t nameSize = length(name);
    if (contains(name, '/')) return append(out, name, nameSize);
    const char* rest = searchPath && *searchPath ? searchPath : "/bin:/usr/bin";
    for (;;) {
        const char* colon = rest;
        while (*colon && *colon != ':') ++colon;
        const size_t dirSize = size_t(colon - rest);
        clear(out);
        const bool fits = dirSize == 0 || (append(out, rest, dirSize) &&
                                           (rest[dirSize - 1] == '/' || append(out, "/", 1)));
        if (fits && append(out, name, nameSize) && isExecutableFile(out->text)) return true;
        if (*colon == '\0') break;
        rest = colon + 1;
    }
    clear(out);
    return false;
}

bool joinRelative(const char* file, const char* relative, Path* out) {
    clear(out);
    if (file[0] != '/') return false;
    size_t lastSlash = 0;
    for (size_t i = 0; file[i]; ++i) {
        if (file[i] == '/') lastSlash = i;
    }
    if (!appendComponents(out, file, lastSlash) ||
        !appendComponents(out, relative, length(relative))) {
        return false;
    }
    return out->size != 0 || append(out, "/", 1);
}

// The header checks and bound are inspectElf()'s (arbexe/elf_header.h); the tests compare the two.
ProgramKind programKind(const char* path) {
    const long fd = sys(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ProgramKind::unreadable;
    ProgramKind kind = ProgramKind::notElf64;
    Elf64_Ehdr header;
    if (readAt(fd, 0, &header, sizeof header) && arbexe::isReadableElf64(header)) {
        kind = ProgramKind::staticProgram;
        // The headers inspectElf() reads, which it reads in one go: none counts unless the file
        // holds them all. Read eight at a time, to keep this frame small (the caller's stack may
        // be tiny).
        constexpr size_t kChunk = 8;
        const size_t count = arbexe::programHeadersToRead(header);
        struct stat st;
        const bool whole = sys(SYS_fstat, fd, reinterpret_cast<long>(&st)) == 0 &&
                           header.e_phoff <= uint64_t(st.st_size) &&
                           count * sizeof(Elf64_Phdr) <= uint64_t(st.st_size) - header.e_phoff;
        Elf64_Phdr headers[kChunk];
        for (size_t first = 0; whole && first < count && kind != ProgramKind::dynamicProgram;
             first += kChunk) {
            const size_t n = count - first < kChunk ? count - first : kChunk;
            if (!readAt(fd, header.e_phoff + first * sizeof(Elf64_Phdr), headers,
                        n * sizeof(Elf64_Phdr))) {
                break;
            }
            for (size_t i = 0; i < n; ++i) {
                if (headers[i].p_type == PT_INTERP) kind = ProgramKind::dynamicProgram;
            }
        }
    }
    sys(SYS_close, fd);
    return kind;
}

// The invocations handled here are `arbrun -- PROGRAM [ARGS]` and `arbrun --standalone -- PROGRAM
// [ARGS]` in an environment without ARBRUN_* variables (ARBRUN_PRELOAD_LIB aside) or LD_PRELOAD.
// Their configuration is the default one (with standalone set for the second), which is what the
// preload library reads from an environment without ARBRUN_* variables.
extern "C" void arbrunFastStart(long* initialStack) {
    const long argc = initialStack[0];
    char** argv = reinterpret_cast<char**>(initialStack + 1);
    char** envp = argv + argc + 1;
    long next = 1;
    const bool standalone = next < argc && same(argv[next], "--standalone");
    if (standalone) ++next;
    if (next >= argc || !same(argv[next], "--")) return;
    ++next;
    if (next >= argc || argv[next][0] == '\0') return;

    const char* searchPath = nullptr;
    const char* libraryOverride = nullptr;
    size_t count = 0;
    for (; envp[count]; ++count) {
        const char* entry = envp[count];
        if (startsWith(entry, "ARBRUN_PRELOAD_LIB=")) {
            if (!libraryOverride) libraryOverride = entry + 19;
        } else if (startsWith(entry, "ARBRUN_") || startsWith(entry, "LD_PRELOAD=")) {
            return;
        } else if (startsWith(entry, "PATH=") && !searchPath) {
            searchPath = entry + 5;
        }
    }

    const size_t bytes = sizeof(Scratch) + (count + 3) * sizeof(const char*);
    const long mapped =
        sys(SYS_mmap, 0, long(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped < 0 && mapped > -4096) return;
    auto* scratch = reinterpret_cast<Scratch*>(mapped);
    auto** environment = reinterpret_cast<const char**>(scratch + 1);
    if (findLibrary(libraryOverride, &scratch->self, &scratch->library) &&
        findProgram(argv[next], searchPath, &scratch->program) &&
        programKind(scratch->program.text) == ProgramKind::dynamicProgram) {
        Path& preload = scratch->preload;
        clear(&preload);
        if (append(&preload, "LD_PRELOAD=", 11) &&
            append(&preload, scratch->library.text, scratch->library.size)) {
            size_t at = 0;
            environment[at++] = preload.text;
            if (standalone) environment[at++] = "ARBRUN_STANDALONE=1";
            for (size_t i = 0; i < count; ++i) environment[at++] = envp[i];
            environment[at] = nullptr;
            sys(SYS_execve, reinterpret_cast<long>(scratch->program.text),
                reinterpret_cast<long>(argv + next), reinterpret_cast<long>(environment));
        }
    }
    sys(SYS_munmap, mapped, long(bytes));  // not taken, or the exec failed: the full launcher's
}

}  // namespace arbfast
