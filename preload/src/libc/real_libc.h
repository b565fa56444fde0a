// The real libc functions behind the ones this library interposes, for pass-through: before the
// runtime is up, on kernel threads where the runtime cannot help, in native fallback mode, and for
// PTHREAD_PROCESS_SHARED objects.
#pragma once

#include <dlfcn.h>

#include <atomic>

namespace arbrun {

// dlsym(RTLD_NEXT, name), or dlvsym when `version` is given; aborts with a message if libc lacks it
// (a libc without pthread_create cannot run this program either way).
void* lookupReal(const char* name, const char* version = nullptr);

// `slot`'s address, looked up first if it is still null. Relaxed: the address is all a caller
// needs, and dlsym's answer is the same for every caller.
inline void* cachedReal(std::atomic<void*>& slot, const char* name, const char* version) {
    void* real = slot.load(std::memory_order_relaxed);
    if (real) [[likely]]
        return real;
    real = lookupReal(name, version);
    slot.store(real, std::memory_order_relaxed);
    return real;
}

}  // namespace arbrun

// The real `fn`, resolved once per call site and cached in a constant-initialised atomic. Not a
// function-local static with a dynamic initialiser: its guard makes a second first caller wait
// (libstdc++ waits through syscall(SYS_futex), which this library interposes, so a user thread
// parks), and most lookups happen inside a blocking-call bracket (io_wait.h), where a thread must
// not switch. Two first callers both look up; they store the same address.
#define ARBRUN_REAL(fn) ARBRUN_REAL_VERSION(fn, nullptr)

// Same, for a symbol with several versions in libc (pthread_cond_* have GLIBC_2.2.5 and 2.3.2).
#define ARBRUN_REAL_VERSION(fn, version)                                                  \
    ([]() -> decltype(&fn) {                                                              \
        static constinit std::atomic<void*> real{nullptr};                                \
        return reinterpret_cast<decltype(&fn)>(::arbrun::cachedReal(real, #fn, version)); \
    }())
