#include "stack.h"

#include <sys/mman.h>
#include <unistd.h>

namespace arbrt::detail {

size_t pageSize() {
    static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return size;
}

bool mapStack(size_t usableSize, Stack* out) {
    const size_t page = pageSize();
    const size_t usable = (usableSize + page - 1) / page * page;
    const size_t total = usable + page;
    // MAP_NORESERVE: 10,000 threads x 8 MiB of virtual stack must not count against overcommit;
    // pages are committed on first touch, like glibc's thread stacks.
    void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (p == MAP_FAILED) return false;
    if (mprotect(p, page, PROT_NONE) != 0) {
        munmap(p, total);
        return false;
    }
    *out = Stack{p, total, page};
    return true;
}

void unmapStack(Stack* stack) {
    if (stack->low) munmap(stack->low, stack->size);
    *stack = Stack{};
}

}  // namespace arbrt::detail
