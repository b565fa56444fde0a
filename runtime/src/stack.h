// User-thread stacks: mmap'ed, lazily committed, with a PROT_NONE guard page at the low end so an
// overflow faults (and is reported by the overflow handler) instead of corrupting a neighbour.
#pragma once

#include <cstddef>

namespace arbrt::detail {

struct Stack {
    void* low = nullptr;  // lowest address of the mapping (the guard page starts here)
    size_t size = 0;      // whole mapping, guard included
    size_t guard = 0;     // bytes of guard at `low`

    void* top() const { return static_cast<char*>(low) + size; }
    size_t usable() const { return size - guard; }
    bool contains(const void* p) const {
        return p >= low && p < static_cast<const char*>(low) + size;
    }
    bool inGuard(const void* p) const {
        return p >= low && p < static_cast<const char*>(low) + guard;
    }
};

size_t pageSize();
// Maps a stack of at least `usableSize` bytes (rounded up to pages) plus one guard page. Returns
// false when the address space or the mapping count is exhausted.
bool mapStack(size_t usableSize, Stack* out);
void unmapStack(Stack* stack);

}  // namespace arbrt::detail
