// The unwinder's entry points this library calls (its C++ runtime's throw, catch and cleanup
// code, and the personality routine that glibc's cancellation runs through our frames), forwarded
// to the system's shared libgcc_s, which is loaded the first time one is called.
//
// Why: a C program (every command of a shell script) does not load libgcc_s natively; linked as
// this library's dependency it was loaded into every process, and its constructor alone asks
// CPUID a dozen times (a trap to the hypervisor in a virtual machine): about 140 us of a process
// start on the 2-vCPU development VM (bench/startup/compare.sh). Most processes never unwind
// through this library. Why not a static unwinder (libgcc_eh): glibc's cancellation unwinds with
// the shared libgcc_s, and our frames' personality routine would then be handed one unwinder's
// context and call the other's accessors. Forwarding keeps exactly one unwinder per process, the
// one glibc and a C++ program load anyway, so nothing changes for them but the time of loading.
//
// Linked with -static-libgcc (preload/CMakeLists.txt): these hidden definitions satisfy every
// reference, so no member of libgcc_eh is linked; the link checks it (no _Unwind_Find_FDE).
#include "libc/unwinder.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "libc/real_libc.h"

// The unwinder's types, declared here rather than taken from <unwind.h>: that header declares the
// entry points with default visibility, and these definitions must stay hidden (exported, they
// would interpose the program's libgcc_s for the whole process). Only the C names and the calling
// convention matter; pointers and integers pass unchanged.
struct _Unwind_Exception;
struct _Unwind_Context;
using _Unwind_Ptr = uintptr_t;
using _Unwind_Word = uintptr_t;
using _Unwind_Reason_Code = int;

namespace arbrun {
namespace {

enum Entry {
    kRaiseException,
    kResume,
    kResumeOrRethrow,
    kDeleteException,
    kGetDataRelBase,
    kGetTextRelBase,
    kGetIPInfo,
    kGetLanguageSpecificData,
    kGetRegionStart,
    kSetGR,
    kSetIP,
    kEntries
};

struct Symbol {
    const char* name;
    const char* version;  // the oldest version libgcc_s defines it under, as our references bind
};
constexpr Symbol kSymbols[kEntries] = {
    {"_Unwind_RaiseException", "GCC_3.0"},
    {"_Unwind_Resume", "GCC_3.0"},
    {"_Unwind_Resume_or_Rethrow", "GCC_3.3"},
    {"_Unwind_DeleteException", "GCC_3.0"},
    {"_Unwind_GetDataRelBase", "GCC_3.0"},
    {"_Unwind_GetTextRelBase", "GCC_3.0"},
    {"_Unwind_GetIPInfo", "GCC_4.2.0"},
    {"_Unwind_GetLanguageSpecificData", "GCC_3.0"},
    {"_Unwind_GetRegionStart", "GCC_3.0"},
    {"_Unwind_SetGR", "GCC_3.0"},
    {"_Unwind_SetIP", "GCC_3.0"},
};

// Written once by the first loadUnwinder (every entry before gLoaded's release store); read by
// every forwarder after gLoaded's acquire load. Racing first calls each resolve the same
// addresses, so a duplicate store is harmless.
void* gEntries[kEntries];
std::atomic<bool> gLoaded{false};

// An exception cannot propagate without the unwinder: say why and stop, as std::terminate would.
[[noreturn]] void unwinderMissing(const char* what) {
    std::fprintf(stderr, "arbrun: cannot load the unwinder libgcc_s.so.1 (%s)\n", what);
    std::abort();
}

template <typename Fn>
Fn entry(Entry e) {
    if (!gLoaded.load(std::memory_order_acquire)) loadUnwinder();
    return reinterpret_cast<Fn>(gEntries[e]);
}

}  // namespace

void loadUnwinder() {
    if (gLoaded.load(std::memory_order_acquire)) return;
    // Never closed: the unwinder stays for the process's life, as when it was a dependency. The
    // real dlopen: this library's own (dlopen.cc) would refresh every user thread's TLS images.
    void* handle = ARBRUN_REAL(dlopen)("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle) unwinderMissing(dlerror());
    for (int e = 0; e < kEntries; ++e) {
        gEntries[e] = dlvsym(handle, kSymbols[e].name, kSymbols[e].version);
        if (!gEntries[e]) unwinderMissing(kSymbols[e].name);
    }
    gLoaded.store(true, std::memory_order_release);
}

}  // namespace arbrun

using arbrun::entry;

extern "C" {

_Unwind_Reason_Code _Unwind_RaiseException(_Unwind_Exception* e);
void _Unwind_Resume(_Unwind_Exception* e);
_Unwind_Reason_Code _Unwind_Resume_or_Rethrow(_Unwind_Exception* e);
void _Unwind_DeleteException(_Unwind_Exception* e);
_Unwind_Ptr _Unwind_GetDataRelBase(_Unwind_Context* c);
_Unwind_Ptr _Unwind_GetTextRelBase(_Unwind_Context* c);
_Unwind_Ptr _Unwind_GetIPInfo(_Unwind_Context* c, int* beforeInsn);
void* _Unwind_GetLanguageSpecificData(_Unwind_Context* c);
_Unwind_Ptr _Unwind_GetRegionStart(_Unwind_Context* c);
void _Unwind_SetGR(_Unwind_Context* c, int index, _Unwind_Word value);
void _Unwind_SetIP(_Unwind_Context* c, _Unwind_Ptr ip);

_Unwind_Reason_Code _Unwind_RaiseException(_Unwind_Exception* e) {
    return entry<decltype(&_Unwind_RaiseException)>(arbrun::kRaiseException)(e);
}
void _Unwind_Resume(_Unwind_Exception* e) {
    entry<decltype(&_Unwind_Resume)>(arbrun::kResume)(e);
    __builtin_unreachable();  // libgcc_s's never returns
}
_Unwind_Reason_Code _Unwind_Resume_or_Rethrow(_Unwind_Exception* e) {
    return entry<decltype(&_Unwind_Resume_or_Rethrow)>(arbrun::kResumeOrRethrow)(e);
}
void _Unwind_DeleteException(_Unwind_Exception* e) {
    entry<decltype(&_Unwind_DeleteException)>(arbrun::kDeleteException)(e);
}
_Unwind_Ptr _Unwind_GetDataRelBase(_Unwind_Context* c) {
    return entry<decltype(&_Unwind_GetDataRelBase)>(arbrun::kGetDataRelBase)(c);
}
_Unwind_Ptr _Unwind_GetTextRelBase(_Unwind_Context* c) {
    return entry<decltype(&_Unwind_GetTextRelBase)>(arbrun::kGetTextRelBase)(c);
}
_Unwind_Ptr _Unwind_GetIPInfo(_Unwind_Context* c, int* beforeInsn) {
    return entry<decltype(&_Unwind_GetIPInfo)>(arbrun::kGetIPInfo)(c, beforeInsn);
}
void* _Unwind_GetLanguageSpecificData(_Unwind_Context* c) {
    return entry<decltype(&_Unwind_GetLanguageSpecificData)>(arbrun::kGetLanguageSpecificData)(c);
}
_Unwind_Ptr _Unwind_GetRegionStart(_Unwind_Context* c) {
    return entry<decltype(&_Unwind_GetRegionStart)>(arbrun::kGetRegionStart)(c);
}
void _Unwind_SetGR(_Unwind_Context* c, int index, _Unwind_Word value) {
    entry<decltype(&_Unwind_SetGR)>(arbrun::kSetGR)(c, index, value);
}
void _Unwind_SetIP(_Unwind_Context* c, _Unwind_Ptr ip) {
    entry<decltype(&_Unwind_SetIP)>(arbrun::kSetIP)(c, ip);
}

}  // extern "C"
