// Lock-free stdio while the program has one thread (stdio_locks.h says why).
//
// glibc 2.27+: a stream skips its lock in getc, putc and the like unless _IO_FLAGS2_NEED_LOCK is
// set in FILE::_flags2 (a field of the public struct); _IO_enable_locks, called by the first
// pthread_create, sets it on every stream and has streams opened later set it themselves.
// Streams are reached through glibc's exported list iterators, under the list lock. The flag's
// value is checked before it is cleared: it must be clear on stdin before this library's threads
// exist and set after; anything else (a process that had threads already, another libc layout)
// leaves stdio alone.
#include "libc/stdio_locks.h"

#include <dlfcn.h>

#include <atomic>

#include "libc/real_libc.h"
#include "libc/shim.h"
#include "process/exec.h"

namespace arbrun {
namespace {

constexpr int kNeedLock = 128;  // glibc's _IO_FLAGS2_NEED_LOCK

using Iter = FILE*;  // glibc's _IO_ITER
struct ListApi {
    void (*lock)() = nullptr;
    void (*unlock)() = nullptr;
    Iter (*begin)() = nullptr;
    Iter (*end)() = nullptr;
    Iter (*next)(Iter) = nullptr;
    FILE* (*file)(Iter) = nullptr;
};

// Resolved once, at start-up, on the program's only thread; read-only afterwards.
ListApi gList;
// Whether stdin's flag was clear before this library's threads (noteStdioBeforeThreads).
bool gLockFreeBefore = false;
// Streams are lock-free now: set by relaxStdioLocks, cleared (once) by restoreStdioLocks. Both
// run on the program's one thread, as do the stream opens that read it (relaxNewStream).
std::atomic<bool> gRelaxed{false};
// The program created its first thread besides main(): streams lock for good. Set (once) by
// restoreStdioLocks before it locks them; relaxStdioLocks, which may come later (this library's
// kernel threads are created on demand), then leaves them alone.
std::atomic<bool> gProgramThreaded{false};

template <typename Fn>
bool resolve(Fn* out, const char* name) {
    *out = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
    return *out != nullptr;
}

bool resolveList() {
    return resolve(&gList.lock, "_IO_list_lock") && resolve(&gList.unlock, "_IO_list_unlock") &&
           resolve(&gList.begin, "_IO_iter_begin") && resolve(&gList.end, "_IO_iter_end") &&
           resolve(&gList.next, "_IO_iter_next") && resolve(&gList.file, "_IO_iter_file");
}

// Sets or clears the flag on every stream glibc knows.
void setOnEveryStream(bool needLock) {
    gList.lock();
    for (Iter i = gList.begin(); i != gList.end(); i = gList.next(i)) {
        FILE* f = gList.file(i);
        f->_flags2 = needLock ? (f->_flags2 | kNeedLock) : (f->_flags2 & ~kNeedLock);
    }
    gList.unlock();
}

}  // namespace

void noteStdioBeforeThreads() {
    gLockFreeBefore = stdin && !(stdin->_flags2 & kNeedLock);
}

void relaxStdioLocks() {
    if (!gLockFreeBefore || gProgramThreaded.load(std::memory_order_acquire) || !stdin ||
        !(stdin->_flags2 & kNeedLock) || !resolveList()) {
        return;
    }
    setOnEveryStream(false);
    gRelaxed.store(true, std::memory_order_release);
}

void restoreStdioLocks() {
    if (!gProgramThreaded.load(std::memory_order_relaxed)) {
        gProgramThreaded.store(true, std::memory_order_release);
    }
    if (!gRelaxed.load(std::memory_order_acquire)) return;
    if (!gRelaxed.exchange(false, std::memory_order_acq_rel)) return;
    setOnEveryStream(true);
}

FILE* relaxNewStream(FILE* stream) {
    if (stream && gRelaxed.load(std::memory_order_acquire)) stream->_flags2 &= ~kNeedLock;
    return stream;
}

}  // namespace arbrun

using namespace arbrun;

// The ways a program opens a stream; each new stream is lock-free while the program has one
// thread. (Streams libc opens for itself keep their lock: correct, only slower.)
ARBRUN_EXPORT FILE* fopen(const char* path, const char* mode) {
    return relaxNewStream(ARBRUN_REAL(fopen)(path, mode));
}
ARBRUN_EXPORT FILE* fopen64(const char* path, const char* mode) {
    return relaxNewStream(ARBRUN_REAL(fopen64)(path, mode));
}
ARBRUN_EXPORT FILE* fdopen(int fd, const char* mode) {
    return relaxNewStream(ARBRUN_REAL(fdopen)(fd, mode));
}
ARBRUN_EXPORT FILE* tmpfile() {
    return relaxNewStream(ARBRUN_REAL(tmpfile)());
}
ARBRUN_EXPORT FILE* tmpfile64() {
    return relaxNewStream(ARBRUN_REAL(tmpfile64)());
}
ARBRUN_EXPORT FILE* fmemopen(void* buffer, size_t size, const char* mode) {
    return relaxNewStream(ARBRUN_REAL(fmemopen)(buffer, size, mode));
}
ARBRUN_EXPORT FILE* open_memstream(char** buffer, size_t* size) {
    return relaxNewStream(ARBRUN_REAL(open_memstream)(buffer, size));
}
// The child inherits the calling thread's signal mask (process/exec.h).
ARBRUN_EXPORT FILE* popen(const char* command, const char* mode) {
    const ExecMask mask;
    return relaxNewStream(ARBRUN_REAL(popen)(command, mode));
}
