#include "sched/stack.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "platform/sys.h"

namespace arbrt::detail {

size_t pageSize() {
    static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return size;
}

size_t roundUpToPage(size_t bytes) {
    const size_t page = pageSize();
    return (bytes + page - 1) / page * page;
}

namespace {

// MADV_GUARD_INSTALL (Linux 6.13; uapi value): guard markers in the page table instead of a
// PROT_NONE VMA. Cleared for good by the first EINVAL (an older kernel, or a locked mapping).
constexpr long kMadvGuardInstall = 102;
std::atomic<bool> gGuardMarkers{true};

// Makes [low, low + guard) fault on any access: a guard marker where the kernel has them, else
// PROT_NONE. A marker survives fork and MADV_DONTNEED and goes with munmap, as the VMA would.
bool installGuard(long low, size_t guard) {
    if (gGuardMarkers.load(std::memory_order_relaxed)) {
        const long r = sysCall(SYS_madvise, low, long(guard), kMadvGuardInstall);
        if (r == 0) return true;
        if (r != -EINVAL) return false;
        gGuardMarkers.store(false, std::memory_order_relaxed);
    }
    return sysCall(SYS_mprotect, low, long(guard), PROT_NONE) == 0;
}

// A read-write, lazily committed mapping for stacks, or -errno.
long mapStackMemory(size_t bytes) {
    // MAP_NORESERVE: 10,000 threads x 8 MiB of virtual stack must not count against overcommit;
    // pages are committed on first touch, like glibc's thread stacks.
    // Through sys.h (tests fail these calls); private anonymous memory needs none of the preload
    // library's shared-mapping bookkeeping that libc's mmap would reach.
    return sysCall(SYS_mmap, 0, long(bytes), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
}

}  // namespace

bool carveStack(StackBatch* batch, size_t usableSize, size_t guardSize, Stack* out) {
    const size_t usable = roundUpToPage(usableSize);
    const size_t guard = roundUpToPage(guardSize);
    const size_t total = usable + guard;
    if (total < usable || total > (size_t{1} << 40) / kStackBatch) {
        return mapStack(usableSize, guardSize, out);  // never batched: one at a time
    }
    if (batch->left == 0 || batch->usable != usable || batch->guard != guard) {
        const long mapped = mapStackMemory(total * kStackBatch);
        if (sysFailed(mapped)) return false;
        releaseStackBatch(batch);
        *batch = StackBatch{reinterpret_cast<char*>(mapped), kStackBatch, usable, guard};
    }
    char* low = batch->next;
    if (guard && !installGuard(reinterpret_cast<long>(low), guard)) return false;  // kept for later
    batch->next += total;
    --batch->left;
    *out = Stack{low, total, guard, true};
    return true;
}

void releaseStackBatch(StackBatch* batch) {
    if (batch->left) {
        sysCall(SYS_munmap, reinterpret_cast<long>(batch->next),
                long((batch->usable + batch->guard) * batch->left));
    }
    *batch = StackBatch{};
}

bool mapStack(size_t usableSize, size_t guardSize, Stack* out) {
    const size_t usable = roundUpToPage(usableSize);
    const size_t guard = roundUpToPage(guardSize);
    const size_t total = usable + guard;
    if (total < usable) return false;  // overflowed: no such address space
    const long mapped = mapStackMemory(total);
    if (sysFailed(mapped)) return false;
    void* p = reinterpret_cast<void*>(mapped);
    if (guard && !installGuard(mapped, guard)) {
        sysCall(SYS_munmap, mapped, long(total));
        return false;
    }
    *out = Stack{p, total, guard, true};
    return true;
}

Stack userStack(void* low, size_t size) {
    return Stack{low, size, 0, false};
}

void unmapStack(Stack* stack) {
    if (stack->low && stack->owned)
        sysCall(SYS_munmap, reinterpret_cast<long>(stack->low), long(stack->size));
    *stack = Stack{};
}

}  // namespace arbrt::detail
