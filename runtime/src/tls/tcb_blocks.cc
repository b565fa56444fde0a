#include "tls/tcb_blocks.h"

#include <sys/mman.h>
#include <sys/syscall.h>

#include "arbrt/embed/invariant.h"
#include "platform/sys.h"
#include "sched/stack.h"

namespace arbrt::detail {
namespace {

// Written once by setTcbBlockSize() (probe, before any carrier exists); read-only afterwards.
constinit size_t gBlockSize = 0;

// Anonymous private memory through sys.h (tests fail these calls): no shared-mapping bookkeeping
// of the preload library's mmap. Lazily committed: a block costs the pages its TLS and TCB touch.
char* mapBlocks(size_t count) {
    const long mapped = sysCall(SYS_mmap, 0, long(gBlockSize * count), PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return sysFailed(mapped) ? nullptr : reinterpret_cast<char*>(mapped);
}

}  // namespace

void setTcbBlockSize(size_t staticTlsSize) {
    gBlockSize = roundUpToPage(staticTlsSize);
}

size_t tcbBlockSize() {
    return gBlockSize;
}

void* takeTcbBlock(TcbBatch* batch) {
    ARB_ASSERT(gBlockSize != 0, "TCB blocks are taken only after GlibcTcb::probe()");
    if (!batch) return mapBlocks(1);
    if (batch->left == 0) {
        char* blocks = mapBlocks(kTcbBatch);
        if (!blocks) return nullptr;
        *batch = TcbBatch{blocks, kTcbBatch};
    }
    char* block = batch->next;
    batch->next += gBlockSize;
    --batch->left;
    return block;
}

void unmapTcbBlock(void* block) {
    sysCall(SYS_munmap, reinterpret_cast<long>(block), long(gBlockSize));
}

void releaseTcbBatch(TcbBatch* batch) {
    if (batch->left) {
        sysCall(SYS_munmap, reinterpret_cast<long>(batch->next), long(gBlockSize * batch->left));
    }
    *batch = TcbBatch{};
}

}  // namespace arbrt::detail
