// dlopen/dlmopen/dlclose: a library with initial-exec TLS loaded while user threads exist gets its
// static TLS initialised in every user thread (glibc does it only for the threads it knows), and
// the images the runtime re-initialises pooled TCBs from follow loads and unloads
// (arbrt::refreshStaticTls).
//
// The real dlopen identifies its caller by return address (for the namespace and the caller's
// RPATH/RUNPATH). Called from here, the caller is this library: a call from a library in another
// namespace is forwarded with dlmopen to that namespace; a bare file name (no '/') is searched
// without the calling object's own RPATH/RUNPATH (LD_LIBRARY_PATH, the cache and the default
// directories apply as usual). Documented limitation.
#include <dlfcn.h>
#include <link.h>

#include <cstring>

#include "arbrt/arbrt.h"
#include "arbrt/embed/tls.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "process/own_runtime.h"

namespace arbrun {
namespace {

// The namespace of the object containing `address` (LM_ID_BASE if unknown).
Lmid_t namespaceOf(void* address) {
    Dl_info info;
    link_map* map = nullptr;
    Lmid_t lmid = LM_ID_BASE;
    if (dladdr1(address, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) && map &&
        dlinfo(map, RTLD_DI_LMID, &lmid) != 0) {
        lmid = LM_ID_BASE;
    }
    return lmid;
}

void afterLoadOrUnload() {
    if (arbrt::isRunning()) arbrt::refreshStaticTls();
}

// A load may also have brought in a runtime that cannot run on user threads (own_runtime.h).
void afterLoad() {
    afterLoadOrUnload();
    if (arbrt::isRunning()) warnIfGoLibraryLoaded();
}

}  // namespace
}  // namespace arbrun

using namespace arbrun;

ARBRUN_EXPORT void* dlopen(const char* file, int mode) {
    const Lmid_t lmid = file ? namespaceOf(__builtin_return_address(0)) : LM_ID_BASE;
    void* handle = lmid == LM_ID_BASE ? ARBRUN_REAL(dlopen)(file, mode)
                                      : ARBRUN_REAL(dlmopen)(lmid, file, mode);
    if (handle) afterLoad();
    return handle;
}

ARBRUN_EXPORT void* dlmopen(Lmid_t lmid, const char* file, int mode) {
    void* handle = ARBRUN_REAL(dlmopen)(lmid, file, mode);
    if (handle) afterLoad();
    return handle;
}

ARBRUN_EXPORT int dlclose(void* handle) {
    const int rc = ARBRUN_REAL(dlclose)(handle);
    if (rc == 0) afterLoadOrUnload();
    return rc;
}
