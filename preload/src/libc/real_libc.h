// The real libc functions behind the ones this library interposes, for pass-through: before the
// runtime is up, on kernel threads where the runtime cannot help, in native fallback mode, and for
// PTHREAD_PROCESS_SHARED objects.
#pragma once

#include <dlfcn.h>

namespace arbrun {

// dlsym(RTLD_NEXT, name), or dlvsym when `version` is given; aborts with a message if libc lacks it
// (a libc without pthread_create cannot run this program either way).
void* lookupReal(const char* name, const char* version = nullptr);

}  // namespace arbrun

// The real `fn`, resolved once per call site (function-local static: thread-safe, and dlsym is not
// called again on the hot path).
#define ARBRUN_REAL(fn)                                                                         \
    ([]() -> decltype(&fn) {                                                                    \
        static decltype(&fn) real = reinterpret_cast<decltype(&fn)>(::arbrun::lookupReal(#fn)); \
        return real;                                                                            \
    }())

// Same, for a symbol with several versions in libc (pthread_cond_* have GLIBC_2.2.5 and 2.3.2).
#define ARBRUN_REAL_VERSION(fn, version)                                         \
    ([]() -> decltype(&fn) {                                                     \
        static decltype(&fn) real =                                              \
            reinterpret_cast<decltype(&fn)>(::arbrun::lookupReal(#fn, version)); \
        return real;                                                             \
    }())
