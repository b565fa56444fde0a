// Batches of stacks (sched/stack.h): one mapping serves kStackBatch stacks, each handed out with
// its own guard and unmapped on its own; a failed mapping leaves the batch as it was. No runtime
// is started: the carve is a plain function over a caller's batch.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <vector>

#include "platform/sys.h"
#include "sched/stack.h"

namespace {

using arbrt::detail::carveStack;
using arbrt::detail::gSyscallInterceptor;
using arbrt::detail::kStackBatch;
using arbrt::detail::pageSize;
using arbrt::detail::releaseStackBatch;
using arbrt::detail::Stack;
using arbrt::detail::StackBatch;
using arbrt::detail::unmapStack;

constexpr size_t kUsable = 64 * 1024;

std::atomic<int> gStackMaps{0};
std::atomic<bool> gRefuse{false};
std::atomic<long> gUnmapped{0};

// Counts stack mappings (MAP_STACK) and unmapped bytes; refuses stack mappings while gRefuse.
bool countStackCalls(long nr, const long args[6], long* result) {
    if (nr == SYS_mmap && (args[3] & MAP_STACK)) {
        if (gRefuse.load()) {
            *result = -ENOMEM;
            return true;
        }
        gStackMaps.fetch_add(1);
    }
    if (nr == SYS_munmap) gUnmapped.fetch_add(args[1]);
    return false;
}

// Installs countStackCalls for one test; resets its counters.
class StackBatchTest : public ::testing::Test {
  protected:
    void SetUp() override {
        gStackMaps.store(0);
        gRefuse.store(false);
        gUnmapped.store(0);
        gSyscallInterceptor.store(countStackCalls);
    }
    void TearDown() override { gSyscallInterceptor.store(nullptr); }
};

TEST_F(StackBatchTest, CarveStack_OneMappingServesABatchOfContiguousStacks) {
    StackBatch batch;
    std::vector<Stack> stacks(kStackBatch + 1);
    for (Stack& s : stacks) ASSERT_TRUE(carveStack(&batch, kUsable, pageSize(), &s));
    EXPECT_EQ(gStackMaps.load(), 2);  // the first kStackBatch from one mapping, then a new one
    for (size_t i = 0; i < kStackBatch; ++i) {
        EXPECT_EQ(stacks[i].size, kUsable + pageSize());
        EXPECT_EQ(stacks[i].guard, pageSize());
        if (i > 0) {
            EXPECT_EQ(stacks[i].low, stacks[i - 1].top());
        }
        static_cast<char*>(stacks[i].top())[-1] = 1;  // usable
    }
    for (Stack& s : stacks) unmapStack(&s);
    releaseStackBatch(&batch);
}

TEST_F(StackBatchTest, CarveStack_EveryStackHasAFaultingGuard) {
    StackBatch batch;
    Stack first, second;
    ASSERT_TRUE(carveStack(&batch, kUsable, pageSize(), &first));
    ASSERT_TRUE(carveStack(&batch, kUsable, pageSize(), &second));
    gSyscallInterceptor.store(nullptr);  // the death test's child forks
    // The guard of the second stack lies right above the first one's top.
    EXPECT_EXIT(static_cast<volatile char*>(second.low)[0] = 1, ::testing::KilledBySignal(SIGSEGV),
                "");
    EXPECT_EXIT(static_cast<volatile char*>(first.low)[pageSize() - 1] = 1,
                ::testing::KilledBySignal(SIGSEGV), "");
    unmapStack(&first);
    unmapStack(&second);
    releaseStackBatch(&batch);
}

// A kernel before 6.13 answers MADV_GUARD_INSTALL with EINVAL: guards are PROT_NONE pages then.
bool noGuardMarkers(long nr, const long args[6], long* result) {
    if (nr == SYS_madvise && args[2] == 102 /*MADV_GUARD_INSTALL*/) {
        *result = -EINVAL;
        return true;
    }
    return false;
}

TEST_F(StackBatchTest, CarveStack_GuardIsProtNoneWithoutGuardMarkers) {
    gSyscallInterceptor.store(noGuardMarkers);
    StackBatch batch;
    Stack first, second;
    ASSERT_TRUE(carveStack(&batch, kUsable, pageSize(), &first));
    ASSERT_TRUE(carveStack(&batch, kUsable, pageSize(), &second));
    gSyscallInterceptor.store(nullptr);
    EXPECT_EXIT(static_cast<volatile char*>(second.low)[0] = 1, ::testing::KilledBySignal(SIGSEGV),
                "");
    static_cast<char*>(first.top())[-1] = 1;
    unmapStack(&first);
    unmapStack(&second);
    releaseStackBatch(&batch);
}

TEST_F(StackBatchTest, CarveStack_RefusedMappingLeavesTheBatchAsItWas) {
    StackBatch batch;
    Stack s;
    gRefuse.store(true);
    EXPECT_FALSE(carveStack(&batch, kUsable, pageSize(), &s));
    EXPECT_EQ(batch.left, 0u);
    gRefuse.store(false);
    ASSERT_TRUE(carveStack(&batch, kUsable, pageSize(), &s));
    EXPECT_EQ(batch.left, kStackBatch - 1);
    // Another size needs a new mapping; refused, the batch keeps its stacks for the old size.
    gRefuse.store(true);
    Stack other;
    EXPECT_FALSE(carveStack(&batch, 2 * kUsable, pageSize(), &other));
    EXPECT_EQ(batch.left, kStackBatch - 1);
    gRefuse.store(false);
    unmapStack(&s);
    releaseStackBatch(&batch);
}

TEST_F(StackBatchTest, ReleaseStackBatch_UnmapsExactlyTheStacksNotHandedOut) {
    StackBatch batch;
    Stack s;
    ASSERT_TRUE(carveStack(&batch, kUsable, pageSize(), &s));
    gUnmapped.store(0);
    releaseStackBatch(&batch);
    EXPECT_EQ(size_t(gUnmapped.load()), (kStackBatch - 1) * (kUsable + pageSize()));
    EXPECT_EQ(batch.left, 0u);
    static_cast<char*>(s.top())[-1] = 1;  // the handed-out stack is still mapped
    gUnmapped.store(0);
    unmapStack(&s);
    EXPECT_EQ(size_t(gUnmapped.load()), kUsable + pageSize());
}

}  // namespace
