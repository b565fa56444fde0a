// TCB blocks (tls/tcb_blocks.h) and the TCBs GlibcTcb makes in them: one mapping serves kTcbBatch
// blocks, each zero-filled and unmapped on its own; a refused mapping leaves the batch as it was;
// a TCB ends at its block's end, with its DTV and static TLS images set up by glibc. No runtime is
// started: the blocks are plain functions over a caller's batch.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

#include "platform/arch.h"
#include "platform/sys.h"
#include "sched/stack.h"
#include "tls/glibc_layout.h"
#include "tls/glibc_tcb.h"
#include "tls/tcb_blocks.h"

namespace {

using arbrt::detail::GlibcTcb;
using arbrt::detail::gSyscallInterceptor;
using arbrt::detail::kSizeofPthread;
using arbrt::detail::kTcbBatch;
using arbrt::detail::pageSize;
using arbrt::detail::TcbBatch;

std::atomic<int> gMaps{0};
std::atomic<long> gMappedBytes{0};
std::atomic<bool> gRefuse{false};
std::atomic<long> gUnmapAddress{0};
std::atomic<long> gUnmapped{0};

// Counts private anonymous mappings and unmapped bytes; refuses mappings while gRefuse.
bool countBlockCalls(long nr, const long args[6], long* result) {
    if (nr == SYS_mmap && (args[3] & MAP_ANONYMOUS)) {
        if (gRefuse.load()) {
            *result = -ENOMEM;
            return true;
        }
        gMaps.fetch_add(1);
        gMappedBytes.fetch_add(args[1]);
    }
    if (nr == SYS_munmap) {
        gUnmapAddress.store(args[0]);
        gUnmapped.fetch_add(args[1]);
    }
    return false;
}

// Probes glibc (which sets the block size) once, and installs countBlockCalls for one test.
class TcbBlocksTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        std::string why;
        ASSERT_TRUE(GlibcTcb::probe(&why)) << why;
    }
    void SetUp() override {
        gMaps.store(0);
        gMappedBytes.store(0);
        gRefuse.store(false);
        gUnmapped.store(0);
        gSyscallInterceptor.store(countBlockCalls);
    }
    void TearDown() override { gSyscallInterceptor.store(nullptr); }
    static size_t blockSize() { return arbrt::detail::tcbBlockSize(); }
};

bool allZero(const char* p, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        if (p[i]) return false;
    }
    return true;
}

TEST_F(TcbBlocksTest, TcbBlockSize_IsWholePagesHoldingTheStaticTls) {
    auto* info = reinterpret_cast<void (*)(size_t*, size_t*)>(
        dlvsym(RTLD_DEFAULT, "_dl_get_tls_static_info", "GLIBC_PRIVATE"));
    ASSERT_NE(info, nullptr);
    size_t size = 0, align = 0;
    info(&size, &align);
    EXPECT_EQ(blockSize() % pageSize(), 0u);
    EXPECT_GE(blockSize(), size);
    EXPECT_LT(blockSize() - size, pageSize());
}

TEST_F(TcbBlocksTest, TakeTcbBlock_OneMappingServesABatchOfContiguousZeroedBlocks) {
    TcbBatch batch;
    std::vector<char*> blocks(kTcbBatch + 1);
    for (char*& b : blocks) {
        b = static_cast<char*>(arbrt::detail::takeTcbBlock(&batch));
        ASSERT_NE(b, nullptr);
    }
    EXPECT_EQ(gMaps.load(), 2);  // the first kTcbBatch from one mapping, then a new one
    EXPECT_EQ(size_t(gMappedBytes.load()), 2 * kTcbBatch * blockSize());
    for (size_t i = 0; i < blocks.size(); ++i) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(blocks[i]) % pageSize(), 0u);
        if (i > 0 && i < kTcbBatch) {
            EXPECT_EQ(blocks[i], blocks[i - 1] + blockSize());
        }
        EXPECT_TRUE(allZero(blocks[i], blockSize()));
        blocks[i][blockSize() - 1] = 1;  // writable
    }
    for (char* b : blocks) arbrt::detail::unmapTcbBlock(b);
    arbrt::detail::releaseTcbBatch(&batch);
}

TEST_F(TcbBlocksTest, TakeTcbBlock_WithoutABatchMapsOneBlock) {
    char* b = static_cast<char*>(arbrt::detail::takeTcbBlock(nullptr));
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(gMaps.load(), 1);
    EXPECT_EQ(size_t(gMappedBytes.load()), blockSize());
    arbrt::detail::unmapTcbBlock(b);
    EXPECT_EQ(gUnmapAddress.load(), reinterpret_cast<long>(b));
    EXPECT_EQ(size_t(gUnmapped.load()), blockSize());
}

TEST_F(TcbBlocksTest, TakeTcbBlock_RefusedMappingReturnsNullAndLeavesTheBatchAsItWas) {
    TcbBatch batch;
    gRefuse.store(true);
    EXPECT_EQ(arbrt::detail::takeTcbBlock(&batch), nullptr);
    EXPECT_EQ(batch.left, 0u);
    EXPECT_EQ(arbrt::detail::takeTcbBlock(nullptr), nullptr);
    gRefuse.store(false);
    void* b = arbrt::detail::takeTcbBlock(&batch);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(batch.left, kTcbBatch - 1);
    arbrt::detail::unmapTcbBlock(b);
    arbrt::detail::releaseTcbBatch(&batch);
}

TEST_F(TcbBlocksTest, ReleaseTcbBatch_UnmapsExactlyTheBlocksNotHandedOut) {
    TcbBatch batch;
    char* b = static_cast<char*>(arbrt::detail::takeTcbBlock(&batch));
    ASSERT_NE(b, nullptr);
    gUnmapped.store(0);
    arbrt::detail::releaseTcbBatch(&batch);
    EXPECT_EQ(size_t(gUnmapped.load()), (kTcbBatch - 1) * blockSize());
    EXPECT_EQ(batch.left, 0u);
    b[0] = 1;  // the handed-out block is still mapped
    arbrt::detail::unmapTcbBlock(b);
}

__thread int gTlsWithImage = 0x5eed;

TEST_F(TcbBlocksTest, Allocate_TcbEndsItsBlockWithDtvAndTlsImages) {
    TcbBatch batch;
    void* tcb = GlibcTcb::allocate(&batch);
    ASSERT_NE(tcb, nullptr);
    char* const end = static_cast<char*>(tcb) + kSizeofPthread;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(end) % pageSize(), 0u);
    EXPECT_EQ(end, batch.next);  // the block carved from the batch, TCB last
    EXPECT_NE(arbrt::detail::field<void*>(tcb, arbrt::detail::kDtvOffset), nullptr);
    // This executable's TLS lies at the same offset below every TCB, its image copied there.
    gTlsWithImage = 1;  // the calling thread's copy only
    const auto offset = reinterpret_cast<uintptr_t>(arbrt::detail::threadPointer()) -
                        reinterpret_cast<uintptr_t>(&gTlsWithImage);
    EXPECT_EQ(*reinterpret_cast<int*>(static_cast<char*>(tcb) - offset), 0x5eed);
    gUnmapped.store(0);
    GlibcTcb::deallocate(tcb);
    EXPECT_EQ(gUnmapAddress.load(), reinterpret_cast<long>(end - blockSize()));
    EXPECT_EQ(size_t(gUnmapped.load()), blockSize());
    arbrt::detail::releaseTcbBatch(&batch);
}

TEST_F(TcbBlocksTest, Allocate_RefusedMappingReturnsNull) {
    gRefuse.store(true);
    EXPECT_EQ(GlibcTcb::allocate(nullptr), nullptr);
}

}  // namespace
