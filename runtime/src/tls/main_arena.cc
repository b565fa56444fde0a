// findMainArena/useMainArena (arbrt/embed/tls.h): main() as a user thread allocates from glibc's
// main arena, as it does natively.
//
// glibc's malloc gives the process's initial thread the main arena (the brk heap, grown with
// 128 KiB of top padding) and every later thread an arena of its own, whose heaps grow by one
// mprotect per page. main() runs as a user thread with a fresh TCB, so without this it got an
// arena of its own: a program that grows its heap in main() made 25,725 mprotect calls where it
// made 785 brk calls natively (100 MB in 512-byte blocks), and took ~25% longer (1M blocks: 280
// against 225 ms on the development VM). Where glibc keeps a thread's arena (a static TLS
// variable of libc, not exported) is found on the initial thread: the one word of libc's TLS block
// that differs from libc's TLS image and points into libc's writable data, where the main arena
// lives. A user thread that has not allocated yet then gets that pointer, and one allocation
// checks it: a chunk of the main arena has the NON_MAIN_ARENA bit of its size word clear.
// Anything unexpected (another allocator than glibc's, no such word or several, a check that
// fails) leaves the thread as it was: it then allocates from an arena of its own, as before.
#include <dlfcn.h>
#include <link.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "arbrt/embed/tls.h"
#include "platform/arch.h"

namespace arbrt {
namespace {

// libc's static TLS block on the calling thread, its image, and its writable data segment.
struct LibcTls {
    uintptr_t codeAddress = 0;  // an address inside libc (__libc_malloc)
    uintptr_t block = 0;
    const unsigned char* image = nullptr;
    size_t imageSize = 0;  // bytes of the image (p_filesz); the rest of the block starts zeroed
    size_t blockSize = 0;  // p_memsz
    uintptr_t dataBegin = 0, dataEnd = 0;
    bool found = false;
};

int findLibcTls(dl_phdr_info* info, size_t, void* arg) {
    auto* out = static_cast<LibcTls*>(arg);
    bool containsCode = false;
    const ElfW(Phdr)* tls = nullptr;
    uintptr_t dataBegin = 0, dataEnd = 0;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        const uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
        if (ph.p_type == PT_TLS) tls = &ph;
        if (ph.p_type != PT_LOAD) continue;
        if (out->codeAddress >= begin && out->codeAddress < begin + ph.p_memsz) containsCode = true;
        if (ph.p_flags & PF_W) dataBegin = begin, dataEnd = begin + ph.p_memsz;
    }
    if (!containsCode) return 0;
    if (tls && info->dlpi_tls_data && dataEnd > dataBegin) {
        out->block = reinterpret_cast<uintptr_t>(info->dlpi_tls_data);
        out->image = reinterpret_cast<const unsigned char*>(info->dlpi_addr + tls->p_vaddr);
        out->imageSize = tls->p_filesz;
        out->blockSize = tls->p_memsz;
        out->dataBegin = dataBegin;
        out->dataEnd = dataEnd;
        out->found = true;
    }
    return 1;  // libc: stop either way
}

// What findMainArena learnt: written once on the initial thread before any user thread exists
// (the runtime's start, which follows, publishes it to them); read by useMainArena.
ptrdiff_t gArenaSlotFromTp = 0;          // the arena word's offset from the thread pointer
void* gMainArena = nullptr;              // null: not found, useMainArena does nothing
void* (*gLibcMalloc)(size_t) = nullptr;  // glibc's malloc, whose chunk header the check reads

}  // namespace

bool findMainArena() {
    void* libcMalloc = dlsym(RTLD_DEFAULT, "__libc_malloc");
    if (!libcMalloc || dlsym(RTLD_DEFAULT, "malloc") != libcMalloc) return false;  // not glibc's
    gLibcMalloc = reinterpret_cast<void* (*)(size_t)>(libcMalloc);
    std::free(gLibcMalloc(1));  // this thread's arena is set once it has allocated (a real call)
    LibcTls libc;
    libc.codeAddress = reinterpret_cast<uintptr_t>(libcMalloc);
    dl_iterate_phdr(findLibcTls, &libc);
    if (!libc.found || libc.block % sizeof(void*) != 0) return false;
    int candidates = 0;
    uintptr_t slot = 0, value = 0;
    for (size_t off = 0; off + sizeof(uintptr_t) <= libc.blockSize; off += sizeof(uintptr_t)) {
        uintptr_t now, initial = 0;
        std::memcpy(&now, reinterpret_cast<const void*>(libc.block + off), sizeof now);
        if (off + sizeof initial <= libc.imageSize) {
            std::memcpy(&initial, libc.image + off, sizeof initial);
        } else if (off < libc.imageSize) {
            continue;  // straddles the end of the image: not a pointer glibc set at run time
        }
        if (now != initial && now >= libc.dataBegin && now < libc.dataEnd) {
            ++candidates;
            slot = libc.block + off;
            value = now;
        }
    }
    if (candidates != 1) return false;
    gArenaSlotFromTp = ptrdiff_t(slot - reinterpret_cast<uintptr_t>(detail::threadPointer()));
    gMainArena = reinterpret_cast<void*>(value);
    return true;
}

bool useMainArena() {
    if (!gMainArena) return false;
    auto* slot =
        reinterpret_cast<void**>(static_cast<char*>(detail::threadPointer()) + gArenaSlotFromTp);
    if (*slot != nullptr) return false;  // this thread has allocated already: it keeps its arena
    *slot = gMainArena;
    void* p = gLibcMalloc(32);  // through the pointer: the header word is outside the object
    constexpr size_t kNonMainArena = 4;  // glibc's chunk flag
    size_t sizeWord = 0;
    if (p) std::memcpy(&sizeWord, static_cast<char*>(p) - sizeof sizeWord, sizeof sizeWord);
    std::free(p);
    return p && (sizeWord & kNonMainArena) == 0;
}

}  // namespace arbrt
