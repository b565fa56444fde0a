#include "tls/glibc_layout.h"

#include <dlfcn.h>
#include <gnu/libc-version.h>

#include <cstring>

#include "platform/arch.h"

namespace arbrt::detail {
namespace {

// A libthread_db field descriptor: {size in bits, element count, offset}.
bool descriptorMatches(const char* name, uint32_t expectedOffset, std::string* why) {
    auto* d = static_cast<const uint32_t*>(dlsym(RTLD_DEFAULT, name));
    if (!d) {
        *why = std::string("glibc does not export ") + name;
        return false;
    }
    if (d[2] != expectedOffset) {
        *why = std::string("unexpected glibc layout: ") + name + " offset " + std::to_string(d[2]);
        return false;
    }
    return true;
}

}  // namespace

// Version first (the offsets are per version), then what glibc says of its own layout, then the
// live TCB: a mismatch anywhere means the runtime would corrupt memory, so it must not start.
bool checkGlibcLayout(std::string* why) {
    if (std::strcmp(gnu_get_libc_version(), "2.36") != 0) {
        *why = std::string("glibc ") + gnu_get_libc_version() +
               " is not a version whose thread layout "
               "arbrun knows (2.36)";
        return false;
    }
    auto* size = static_cast<const uint32_t*>(dlsym(RTLD_DEFAULT, "_thread_db_sizeof_pthread"));
    if (!size || size[0] != kSizeofPthread) {
        *why = "unexpected size of glibc's struct pthread";
        return false;
    }
    if (!descriptorMatches("_thread_db_pthread_tid", kTid, why) ||
        !descriptorMatches("_thread_db_pthread_specific", kSpecific, why) ||
        !descriptorMatches("_thread_db_pthread_dtvp", kDtvOffset, why)) {
        return false;
    }
    void* tp = threadPointer();
    if (field<void*>(tp, kSelfOffset) != tp || field<void*>(tp, kTcbOffset) != tp) {
        *why = "the thread pointer does not point at a glibc TCB";
        return false;
    }
    if (field<void*>(tp, kUserThreadSlot) || field<void*>(tp, kCarrierSlot) ||
        field<void*>(tp, kTlsGenerationSlot)) {
        *why = "the TCB words arbrun uses are not free in this glibc";
        return false;
    }
    return true;
}

}  // namespace arbrt::detail
