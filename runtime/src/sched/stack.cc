#include "sched/stack.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

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

bool mapStack(size_t usableSize, size_t guardSize, Stack* out) {
    const size_t usable = roundUpToPage(usableSize);
    const size_t guard = roundUpToPage(guardSize);
    const size_t total = usable + guard;
    if (total < usable) return false;  // overflowed: no such address space
    // MAP_NORESERVE: 10,000 threads x 8 MiB of virtual stack must not count against overcommit;
    // pages are committed on first touch, like glibc's thread stacks.
    // Through sys.h (tests fail these calls); private anonymous memory needs none of the preload
    // library's shared-mapping bookkeeping that libc's mmap would reach.
    const long mapped = sysCall(SYS_mmap, 0, long(total), PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (sysFailed(mapped)) return false;
    void* p = reinterpret_cast<void*>(mapped);
    if (guard && sysCall(SYS_mprotect, mapped, long(guard), PROT_NONE) != 0) {
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
