// loadedGoObject(): the program headers of every loaded object are mapped, and so are their
// PT_NOTE segments (they lie in the first read-only LOAD segment), so the Go build-id note is
// found without opening a file.
#include <link.h>

#include "arbexe/elf_facts.h"

namespace arbexe {
namespace {

// dl_iterate_phdr's callback: stops at (returns 1 for) the first object with a Go note.
int visitObject(dl_phdr_info* info, size_t, void* found) {
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& p = info->dlpi_phdr[i];
        if (p.p_type != PT_NOTE) continue;
        const void* notes = reinterpret_cast<const void*>(info->dlpi_addr + p.p_vaddr);
        if (notesHaveGoBuildId(notes, size_t(p.p_memsz), p.p_align == 8 ? 8 : 4)) {
            *static_cast<const char**>(found) = info->dlpi_name ? info->dlpi_name : "";
            return 1;
        }
    }
    return 0;
}

}  // namespace

// dl_iterate_phdr takes ld.so's lock: call it from ordinary code, not from a signal handler.
const char* loadedGoObject() {
    const char* found = nullptr;
    dl_iterate_phdr(visitObject, &found);
    return found;
}

}  // namespace arbexe
