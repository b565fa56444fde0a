#include "glibc_tcb.h"

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <locale.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "arch.h"

extern "C" {
extern const unsigned int __rseq_size;
extern const ptrdiff_t __rseq_offset;
}

namespace arbrt::detail {
namespace {

// glibc 2.36 x86-64 offsets (struct pthread / tcbhead_t). Checked against _thread_db_* in probe().
constexpr size_t kSizeofPthread = 2368;
constexpr size_t kTcbOffset = 0x0, kDtvOffset = 0x8, kSelfOffset = 0x10, kMultipleThreads = 0x18;
constexpr size_t kSysinfo = 0x20, kStackGuard = 0x28, kPointerGuard = 0x30, kFeature1 = 0x48;
constexpr size_t kList = 704, kTid = 720, kRobustHead = 736, kSpecific1stBlock = 784,
                 kSpecific = 1296;
constexpr size_t kSpecificUsed = 1552, kStackBlock = 1680, kStackBlockSize = 1688,
                 kGuardSize = 1696;
constexpr size_t kSpecificBlocks = 32, kKeyDataSize = 16;

// One static TLS block to re-initialise on reuse: lives at tp - offset.
struct StaticTlsModule {
    size_t offset;
    const void* image;
    size_t fileSize;
    size_t memSize;
};

// Written once by probe() before any carrier exists; read-only afterwards. constinit: probe() may
// run from an interposition library's constructor, before dynamic initialisers of this object file.
struct Layout {
    void* (*allocateTls)(void*) = nullptr;
    void (*deallocateTls)(void*, bool) = nullptr;
    void (*callTlsDtors)() = nullptr;
    void (*ctypeInit)() = nullptr;
    uintptr_t sysinfo = 0, stackGuard = 0, pointerGuard = 0;
    uint32_t feature1 = 0;
    std::vector<StaticTlsModule> modulesToReset;  // every static TLS module but libc's
};
constinit Layout gLayout;

std::atomic<int32_t> gNextUserTid{0x400000};

template <typename T>
T& field(void* tcb, size_t offset) {
    return *reinterpret_cast<T*>(static_cast<char*>(tcb) + offset);
}

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

bool checkLayout(std::string* why) {
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
    if (field<void*>(tp, kUserThreadSlot) || field<void*>(tp, kCarrierSlot)) {
        *why = "the TCB words arbrun uses are not free in this glibc";
        return false;
    }
    return true;
}

bool resolvePrivateSymbols(std::string* why) {
    gLayout.allocateTls = reinterpret_cast<void* (*)(void*)>(
        dlvsym(RTLD_DEFAULT, "_dl_allocate_tls", "GLIBC_PRIVATE"));
    gLayout.deallocateTls = reinterpret_cast<void (*)(void*, bool)>(
        dlvsym(RTLD_DEFAULT, "_dl_deallocate_tls", "GLIBC_PRIVATE"));
    gLayout.callTlsDtors =
        reinterpret_cast<void (*)()>(dlvsym(RTLD_DEFAULT, "__call_tls_dtors", "GLIBC_PRIVATE"));
    gLayout.ctypeInit =
        reinterpret_cast<void (*)()>(dlvsym(RTLD_DEFAULT, "__ctype_init", "GLIBC_PRIVATE"));
    if (!gLayout.allocateTls || !gLayout.deallocateTls || !gLayout.callTlsDtors ||
        !gLayout.ctypeInit) {
        *why =
            "glibc's private TLS entry points (_dl_allocate_tls, __call_tls_dtors, __ctype_init) "
            "are missing";
        return false;
    }
    return true;
}

// dl_iterate_phdr callback: records each module with TLS in the calling thread's static TLS.
int collectStaticTls(dl_phdr_info* info, size_t, void* out) {
    auto* modules = static_cast<std::vector<StaticTlsModule>*>(out);
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_TLS || !info->dlpi_tls_data) continue;
        if (std::strstr(info->dlpi_name, "/libc.so.6")) continue;  // kept across reuse, see header
        auto tp = reinterpret_cast<uintptr_t>(threadPointer());
        auto data = reinterpret_cast<uintptr_t>(info->dlpi_tls_data);
        if (data >= tp) continue;  // not in the static block (x86-64 TLS lies below tp)
        modules->push_back({tp - data, reinterpret_cast<const void*>(info->dlpi_addr + ph.p_vaddr),
                            ph.p_filesz, ph.p_memsz});
    }
    return 0;
}

}  // namespace

bool GlibcTcb::probe(std::string* why) {
    if (!checkLayout(why) || !resolvePrivateSymbols(why)) return false;
    void* tp = threadPointer();
    gLayout.sysinfo = field<uintptr_t>(tp, kSysinfo);
    gLayout.stackGuard = field<uintptr_t>(tp, kStackGuard);
    gLayout.pointerGuard = field<uintptr_t>(tp, kPointerGuard);
    gLayout.feature1 = field<uint32_t>(tp, kFeature1);
    gLayout.modulesToReset.clear();
    dl_iterate_phdr(collectStaticTls, &gLayout.modulesToReset);
    return true;
}

void* GlibcTcb::allocate() {
    return gLayout.allocateTls(nullptr);
}

void GlibcTcb::deallocate(void* tcb) {
    gLayout.deallocateTls(tcb, true);
}

void GlibcTcb::prepare(void* tcb, ThreadContext* context, void* stackLow, size_t stackSize,
                       size_t guardSize) {
    // Header: glibc reads these through %fs (THREAD_SELF, stack protector, pointer mangling, CET).
    field<void*>(tcb, kTcbOffset) = tcb;
    field<void*>(tcb, kSelfOffset) = tcb;
    field<int>(tcb, kMultipleThreads) = 1;  // else malloc skips locking
    field<uintptr_t>(tcb, kSysinfo) = gLayout.sysinfo;
    field<uintptr_t>(tcb, kStackGuard) = gLayout.stackGuard;
    field<uintptr_t>(tcb, kPointerGuard) = gLayout.pointerGuard;
    field<uint32_t>(tcb, kFeature1) = gLayout.feature1;
    writeTcbSlot(tcb, kUserThreadSlot, context);
    writeTcbSlot(tcb, kCarrierSlot, nullptr);
    // struct pthread: owner id of glibc's recursive locks, robust list, keys, stack bounds.
    if (field<int32_t>(tcb, kTid) == 0) {
        field<int32_t>(tcb, kTid) = gNextUserTid.fetch_add(1, std::memory_order_relaxed);
    }
    // An empty circular list node: fork()'s child unlinks the calling thread from glibc's thread
    // list (list_del) before relinking it, which must not follow null pointers.
    void* node = static_cast<char*>(tcb) + kList;
    field<void*>(tcb, kList) = node;
    field<void*>(tcb, kList + 8) = node;
    void* robust = static_cast<char*>(tcb) + kRobustHead;
    field<void*>(tcb, kRobustHead) = robust;
    field<void*>(tcb, kSpecific) = static_cast<char*>(tcb) + kSpecific1stBlock;
    field<void*>(tcb, kStackBlock) = stackLow;
    field<size_t>(tcb, kStackBlockSize) = stackSize;
    field<size_t>(tcb, kGuardSize) = guardSize;
    if (__rseq_size > 0) {
        // rseq's cpu_id = RSEQ_CPU_ID_REGISTRATION_FAILED: sched_getcpu() asks the kernel (the
        // carrier's cpu) instead of trusting an area the kernel never updates for this TCB.
        field<int32_t>(tcb, static_cast<size_t>(__rseq_offset) + 4) = -2;
    }
}

void GlibcTcb::resetForReuse(void* tcb) {
    auto tp = reinterpret_cast<uintptr_t>(tcb);
    for (const StaticTlsModule& m : gLayout.modulesToReset) {
        auto* block = reinterpret_cast<char*>(tp - m.offset);
        std::memcpy(block, m.image, m.fileSize);
        std::memset(block + m.fileSize, 0, m.memSize - m.fileSize);
    }
    if (field<bool>(tcb, kSpecificUsed)) {
        // glibc pthread keys set by the previous occupant (without the preload layer): drop them.
        auto** blocks = &field<void*>(tcb, kSpecific);
        for (size_t i = 1; i < kSpecificBlocks; ++i) {
            std::free(blocks[i]);
            blocks[i] = nullptr;
        }
        std::memset(static_cast<char*>(tcb) + kSpecific1stBlock, 0, kSpecificBlocks * kKeyDataSize);
        field<bool>(tcb, kSpecificUsed) = false;
    }
}

void GlibcTcb::resetLibcState(bool reused) {
    if (!reused) {
        gLayout.ctypeInit();
        return;
    }
    errno = 0;
    if (uselocale(nullptr) != LC_GLOBAL_LOCALE) uselocale(LC_GLOBAL_LOCALE);
}

void GlibcTcb::runTlsDestructors() {
    gLayout.callTlsDtors();
}

int32_t GlibcTcb::userThreadId(void* tcb) {
    return field<int32_t>(tcb, kTid);
}

}  // namespace arbrt::detail
