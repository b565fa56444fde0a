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

// Stacks of one size mapped kStackBatch at a time, contiguous, and handed out one by one (each
// then an ordinary stack: unmapStack() unmaps exactly its own range). One mmap serves many
// creates, and where the kernel has MADV_GUARD_INSTALL (6.13) a guard is a page-table marker, not
// a VMA split, whose page table the stack below it shares for its top page: measured here, per
// 8 MiB stack, mmap + guard 3.5 us and first touch of its top page 3.4 us one by one, 1.6 us and
// 1.9 us in a batch with guard markers (2.4 us and 3.4 us with mprotect guards). Not shared: the
// caller gives each user its own batch (a core's, touched only by its carrier). 64 stacks to a
// batch (512 MiB of address space for 8 MiB stacks, never committed until touched): each mmap
// holds the address-space lock for writing, which stalls page faults and guard installs of the
// other carriers (with 16, perf showed the creating carrier asleep on it in its guard installs).
struct StackBatch {
    char* next = nullptr;  // lowest address of the next stack to hand out
    size_t left = 0;       // stacks still mapped at `next` and above
    size_t usable = 0;     // their sizes (rounded to pages)
    size_t guard = 0;
};
constexpr size_t kStackBatch = 64;
// Like mapStack(), from `batch` when it holds stacks of these sizes, else from a new batch (what
// is left of the old one is unmapped). False when the address space or mapping count is out.
bool carveStack(StackBatch* batch, size_t usableSize, size_t guardSize, Stack* out);
// Unmaps the stacks `batch` still holds (the runtime stops).
void releaseStackBatch(StackBatch* batch);

}  // namespace arbrt::detail
