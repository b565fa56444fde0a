// Memory for user TCBs: glibc's struct pthread with the static TLS below it (x86-64 keeps the TCB
// above its TLS), in blocks of whole pages that this runtime maps, so that a TCB costs no malloc
// and each block can be unmapped on its own. Per-core batches make one mmap serve many fresh TCBs,
// as StackBatch does for stacks (stack.h).
#pragma once

#include <cstddef>

namespace arbrt::detail {

// Blocks of one size mapped kTcbBatch at a time, contiguous, handed out lowest first. Touched only
// by the owning core's runner (Core::tcbBatch), so no lock.
struct TcbBatch {
    char* next = nullptr;  // the next block to hand out
    size_t left = 0;       // blocks still mapped at `next` and above
};
constexpr size_t kTcbBatch = 128;

// Sets the block size: glibc's static TLS size (TCB included) rounded up to pages. Called once by
// GlibcTcb::probe(), before any block is taken; the size never changes afterwards (glibc fixes it
// at start-up; dlopen'd initial-exec TLS goes in its surplus).
void setTcbBlockSize(size_t staticTlsSize);
size_t tcbBlockSize();

// A zero-filled block (its lowest address): from `batch` when given (a new batch is mapped when it
// is empty), else mapped alone. Null when memory or address space is out. Makes no call that can
// switch user threads, so a caller that read its core's batch stays on that core throughout.
void* takeTcbBlock(TcbBatch* batch);
// Unmaps a block that takeTcbBlock() returned.
void unmapTcbBlock(void* block);
// Unmaps the blocks `batch` still holds (the runtime stops).
void releaseTcbBatch(TcbBatch* batch);

}  // namespace arbrt::detail
