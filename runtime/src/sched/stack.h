// User-thread stacks: mmap'ed, lazily committed, with a PROT_NONE guard at the low end so an
// overflow faults (and is reported by the overflow handler) instead of corrupting a neighbour. A
// stack can also be the caller's own memory (pthread_attr_setstack): never unmapped or pooled by
// us, and without a guard, as glibc does.
#pragma once

#include <cstddef>

namespace arbrt::detail {

struct Stack {
    void* low = nullptr;  // lowest address of the stack (the guard, if any, starts here)
    size_t size = 0;      // whole stack, guard included
    size_t guard = 0;     // bytes of guard at `low`
    bool owned = false;   // mapped by us (else the caller's memory: only forgotten, never unmapped)

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
size_t roundUpToPage(size_t bytes);
// Maps a stack of at least `usableSize` bytes plus `guardSize` bytes of guard (both rounded up to
// pages). Returns false when the address space or the mapping count is exhausted.
bool mapStack(size_t usableSize, size_t guardSize, Stack* out);
// The caller's memory [low, low + size) as a stack: no guard, never unmapped by us.
Stack userStack(void* low, size_t size);
// Unmaps a stack we own; forgets a caller's. Leaves `stack` empty either way.
void unmapStack(Stack* stack);

}  // namespace arbrt::detail
