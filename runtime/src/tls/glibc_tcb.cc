#include "tls/glibc_tcb.h"

#include <dlfcn.h>
#include <link.h>
#include <locale.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "arbrt/sync.h"
#include "platform/arch.h"
#include "sched/context_pool.h"
#include "sched/stack.h"
#include "tls/glibc_layout.h"
#include "tls/tcb_blocks.h"

extern "C" {
extern const unsigned int __rseq_size;
extern const ptrdiff_t __rseq_offset;
}

namespace arbrt::detail {
namespace {

// One module's block in every static TLS area: lives at tp - offset. `image` is a private copy of
// the initialisation image (dlclose may unmap the module's own), `key` identifies the module
// (its PT_TLS image address in memory) and `generation` is the list generation that added it.
struct StaticTlsModule {
    size_t offset;
    const void* image;
    size_t fileSize;
    size_t memSize;
    const void* key;
    uint64_t generation;
};

// An immutable list of static TLS modules. Published through gStaticTls (release/acquire); a list
// is never freed once published (readers hold no lock; lists change only at dlopen/dlclose).
struct StaticTlsList {
    std::vector<StaticTlsModule> modules;
    uint64_t generation = 0;
};

// Written once by probe() before any carrier exists; read-only afterwards. constinit: probe() may
// run from an interposition library's constructor, before dynamic initialisers of this object file.
struct Layout {
    void* (*allocateTls)(void*) = nullptr;
    void (*deallocateTls)(void*, bool) = nullptr;
    void (*callTlsDtors)() = nullptr;
    void (*ctypeInit)() = nullptr;
    void* (*tlsGetAddr)(void*) = nullptr;
    void (*staticTlsInfo)(size_t*, size_t*) = nullptr;
    uintptr_t sysinfo = 0, stackGuard = 0, pointerGuard = 0;
    uint32_t feature1 = 0;
};
constinit Layout gLayout;
constinit std::atomic<const StaticTlsList*> gStaticTls{nullptr};
// Serialises rescans (refreshStaticTls) and is held across fork (prepareFork).
constinit SpinLock gStaticTlsLock{LockRank::staticTls};

std::atomic<int32_t> gNextUserTid{0x400000};

bool resolvePrivateSymbols(std::string* why) {
    gLayout.allocateTls = reinterpret_cast<void* (*)(void*)>(
        dlvsym(RTLD_DEFAULT, "_dl_allocate_tls", "GLIBC_PRIVATE"));
    gLayout.deallocateTls = reinterpret_cast<void (*)(void*, bool)>(
        dlvsym(RTLD_DEFAULT, "_dl_deallocate_tls", "GLIBC_PRIVATE"));
    gLayout.callTlsDtors =
        reinterpret_cast<void (*)()>(dlvsym(RTLD_DEFAULT, "__call_tls_dtors", "GLIBC_PRIVATE"));
    gLayout.ctypeInit =
        reinterpret_cast<void (*)()>(dlvsym(RTLD_DEFAULT, "__ctype_init", "GLIBC_PRIVATE"));
    gLayout.tlsGetAddr = reinterpret_cast<void* (*)(void*)>(dlsym(RTLD_DEFAULT, "__tls_get_addr"));
    gLayout.staticTlsInfo = reinterpret_cast<void (*)(size_t*, size_t*)>(
        dlvsym(RTLD_DEFAULT, "_dl_get_tls_static_info", "GLIBC_PRIVATE"));
    if (!gLayout.allocateTls || !gLayout.deallocateTls || !gLayout.callTlsDtors ||
        !gLayout.ctypeInit || !gLayout.tlsGetAddr || !gLayout.staticTlsInfo) {
        *why =
            "glibc's private TLS entry points (_dl_allocate_tls, __call_tls_dtors, __ctype_init, "
            "__tls_get_addr, _dl_get_tls_static_info) are missing";
        return false;
    }
    return true;
}

// What a scan of the loaded modules sees: the previous list (modules already known keep their
// entry) and the list being built.
struct Scan {
    const StaticTlsList* previous;
    StaticTlsList* next;
    bool added = false;
};

const StaticTlsModule* findModule(const StaticTlsList* list, const void* key) {
    if (!list) return nullptr;
    for (const StaticTlsModule& m : list->modules) {
        if (m.key == key) return &m;
    }
    return nullptr;
}

// The calling thread's block of module `modid`, allocating or linking it as a TLS access would.
void* blockOf(dl_phdr_info* info) {
    if (info->dlpi_tls_data) return info->dlpi_tls_data;
    struct {
        unsigned long module, offset;
    } index{info->dlpi_tls_modid, 0};
    return gLayout.tlsGetAddr(&index);
}

// dl_iterate_phdr callback: records each module whose TLS lies in the static TLS block.
int collectStaticTls(dl_phdr_info* info, size_t, void* raw) {
    auto* scan = static_cast<Scan*>(raw);
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_TLS || info->dlpi_tls_modid == 0) continue;
        if (std::strstr(info->dlpi_name, "/libc.so.6")) continue;  // kept across reuse, see header
        const auto* key = reinterpret_cast<const void*>(info->dlpi_addr + ph.p_vaddr);
        if (const StaticTlsModule* known = findModule(scan->previous, key)) {
            scan->next->modules.push_back(*known);
            continue;
        }
        size_t staticSize = 0, staticAlign = 0;
        gLayout.staticTlsInfo(&staticSize, &staticAlign);
        const auto tp = reinterpret_cast<uintptr_t>(threadPointer());
        const auto data = reinterpret_cast<uintptr_t>(blockOf(info));
        if (data >= tp || data < tp - staticSize) continue;  // dynamic TLS: the DTV handles it
        auto* image = new char[ph.p_filesz ? ph.p_filesz : 1];
        std::memcpy(image, key, ph.p_filesz);
        scan->next->modules.push_back(
            {tp - data, image, ph.p_filesz, ph.p_memsz, key, scan->next->generation});
        scan->added = true;
    }
    return 0;
}

void copyModule(void* tcb, const StaticTlsModule& m) {
    auto* block = reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(tcb) - m.offset);
    std::memcpy(block, m.image, m.fileSize);
    std::memset(block + m.fileSize, 0, m.memSize - m.fileSize);
}

std::atomic_ref<uint64_t> tlsGenerationOf(void* tcb) {
    return std::atomic_ref<uint64_t>(field<uint64_t>(tcb, kTlsGenerationSlot));
}

// Brings `tcb` up to `list`: copies the modules added after the generation it holds. The CAS makes
// exactly one caller (a rescan or the thread's own start) copy each module into a given TCB.
void catchUp(void* tcb, const StaticTlsList* list) {
    if (!list) return;
    std::atomic_ref<uint64_t> held = tlsGenerationOf(tcb);
    uint64_t old = held.load(std::memory_order_acquire);
    while (old < list->generation) {
        if (held.compare_exchange_weak(old, list->generation, std::memory_order_acq_rel)) {
            for (const StaticTlsModule& m : list->modules) {
                if (m.generation > old) copyModule(tcb, m);
            }
            return;
        }
    }
}

}  // namespace

bool GlibcTcb::probe(std::string* why) {
    if (!checkGlibcLayout(why) || !resolvePrivateSymbols(why)) return false;
    void* tp = threadPointer();
    gLayout.sysinfo = field<uintptr_t>(tp, kSysinfo);
    gLayout.stackGuard = field<uintptr_t>(tp, kStackGuard);
    gLayout.pointerGuard = field<uintptr_t>(tp, kPointerGuard);
    gLayout.feature1 = field<uint32_t>(tp, kFeature1);
    size_t staticSize = 0, staticAlign = 0;
    gLayout.staticTlsInfo(&staticSize, &staticAlign);
    // A block's TCB ends at the block's end (allocate()): it must be aligned as glibc aligns it.
    if (staticSize < kSizeofPthread || staticAlign == 0 || kSizeofPthread % staticAlign != 0 ||
        pageSize() % staticAlign != 0) {
        *why = "glibc's static TLS size or alignment is unexpected (" + std::to_string(staticSize) +
               " bytes, aligned to " + std::to_string(staticAlign) + ")";
        return false;
    }
    setTcbBlockSize(staticSize);
    if (!gStaticTls.load(std::memory_order_acquire)) {
        auto* list = new StaticTlsList;
        Scan scan{nullptr, list};
        dl_iterate_phdr(collectStaticTls, &scan);
        gStaticTls.store(list, std::memory_order_release);
    }
    return true;
}

void* GlibcTcb::allocate(TcbBatch* batch) {
    // Taken before any call into glibc, whose DTV calloc below may block on an arena lock and
    // switch user threads: the batch belongs to the core the caller runs on now.
    char* block = static_cast<char*>(takeTcbBlock(batch));
    if (!block) return nullptr;
    // The generation is read first: glibc initialises every module it knows at allocation, which
    // includes at least those of this list (a later rescan then copies what may be missing).
    const StaticTlsList* list = gStaticTls.load(std::memory_order_acquire);
    // With memory given, glibc only allocates the DTV and copies the TLS images below the TCB; the
    // block is zero-filled, as glibc's own path clears the TCB.
    void* tcb = gLayout.allocateTls(block + tcbBlockSize() - kSizeofPthread);
    if (!tcb) {
        unmapTcbBlock(block);
        return nullptr;
    }
    if (list) tlsGenerationOf(tcb).store(list->generation, std::memory_order_release);
    return tcb;
}

void GlibcTcb::deallocate(void* tcb) {
    gLayout.deallocateTls(tcb, false);  // the DTV and dynamic TLS: the block is ours
    unmapTcbBlock(static_cast<char*>(tcb) + kSizeofPthread - tcbBlockSize());
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

bool GlibcTcb::preparedFor(const void* tcb, const ThreadContext* context, const void* stackLow,
                           size_t stackSize, size_t guardSize) {
    // The user-thread slot is cleared where a TCB stops being a user thread's (fork.cc), and a
    // fresh TCB has a zero slot and tid: both then fail here. The thread-list node and the robust
    // list (glibc's robust mutexes, where the preload does not take them) are on the tid's line:
    // an occupant that left either non-empty gets prepare()'s reset.
    auto* raw = const_cast<void*>(tcb);
    char* const node = static_cast<char*>(raw) + kList;
    char* const robust = static_cast<char*>(raw) + kRobustHead;
    return field<ThreadContext*>(raw, kUserThreadSlot) == context &&
           field<int32_t>(raw, kTid) != 0 && field<void*>(raw, kList) == node &&
           field<void*>(raw, kList + 8) == node && field<void*>(raw, kRobustHead) == robust &&
           field<const void*>(raw, kStackBlock) == stackLow &&
           field<size_t>(raw, kStackBlockSize) == stackSize &&
           field<size_t>(raw, kGuardSize) == guardSize;
}

// glibc's list_t: {next, prev}, circular, embedded in struct pthread at kList. A node linked to
// itself is on no list (prepare() leaves user TCBs so).
void GlibcTcb::moveThreadListEntry(void* userTcb, void* kernelTcb, int32_t kernelTid) {
    void* from = static_cast<char*>(userTcb) + kList;
    void* to = static_cast<char*>(kernelTcb) + kList;
    auto** next = field<void**>(userTcb, kList);
    auto** prev = field<void**>(userTcb, kList + 8);
    if (next == from) return;
    field<void*>(kernelTcb, kList) = next;
    field<void*>(kernelTcb, kList + 8) = prev;
    prev[0] = to;  // prev->next
    next[1] = to;  // next->prev
    field<void*>(userTcb, kList) = from;
    field<void*>(userTcb, kList + 8) = from;
    field<int32_t>(kernelTcb, kTid) = kernelTid;
}

void GlibcTcb::resetForReuse(void* tcb) {
    if (const StaticTlsList* list = gStaticTls.load(std::memory_order_acquire)) {
        for (const StaticTlsModule& m : list->modules) copyModule(tcb, m);
        std::atomic_ref<uint64_t> held = tlsGenerationOf(tcb);
        uint64_t old = held.load(std::memory_order_relaxed);
        while (old < list->generation &&
               !held.compare_exchange_weak(old, list->generation, std::memory_order_acq_rel)) {
        }
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
    catchUp(threadPointer(), gStaticTls.load(std::memory_order_acquire));
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

void GlibcTcb::refreshStaticTls() {
    std::lock_guard<SpinLock> guard(gStaticTlsLock);
    const StaticTlsList* previous = gStaticTls.load(std::memory_order_acquire);
    if (!previous) return;  // not probed: no user thread exists
    auto* next = new StaticTlsList;
    next->generation = previous->generation + 1;
    Scan scan{previous, next};
    dl_iterate_phdr(collectStaticTls, &scan);
    if (!scan.added) {
        next->generation = previous->generation;
        if (next->modules.size() == previous->modules.size()) {
            delete next;  // nothing loaded or unloaded
            return;
        }
    }
    gStaticTls.store(next, std::memory_order_release);  // `previous` stays: readers may hold it
    if (!scan.added) return;
    lockContextPool();
    forEachContextLocked(
        [](ThreadContext* t, void* list) {
            if (t->tcb) catchUp(t->tcb, static_cast<const StaticTlsList*>(list));
        },
        next);
    unlockContextPool();
}

void GlibcTcb::lockStaticTls() {
    gStaticTlsLock.lock();
}

void GlibcTcb::unlockStaticTls() {
    gStaticTlsLock.unlock();
}

int32_t GlibcTcb::userThreadId(void* tcb) {
    return field<int32_t>(tcb, kTid);
}

}  // namespace arbrt::detail

namespace arbrt {

void refreshStaticTls() {
    detail::GlibcTcb::refreshStaticTls();
}

}  // namespace arbrt
