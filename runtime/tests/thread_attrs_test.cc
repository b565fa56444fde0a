// Thread attributes and identity the runtime provides to the preload layer: caller-provided stacks
// (ThreadAttributes::stackAddr), guard sizes, threadStack/isDetached, per-thread CPU clocks
// (threadCpuNs), context slots (threadSlot/threadAtSlot) and the extension-storage reset hook.
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "test_util.h"

namespace {

using arbrt_test::eventually;
using arbrt_test::pinnedTo;

class ThreadAttrs : public arbrt_test::RuntimeTest<2> {};

size_t page() {
    return size_t(sysconf(_SC_PAGESIZE));
}

// Records where its own stack frame lies and what threadStack() says about itself.
struct StackProbe {
    const char* local = nullptr;
    arbrt::StackBounds bounds;
    bool found = false;
};

void probeStack(StackProbe* p) {
    char local = 1;
    asm volatile("" ::"r"(&local) : "memory");
    p->local = &local;
    p->found = arbrt::threadStack(arbrt::self(), &p->bounds);
}

TEST_F(ThreadAttrs, StackAddr_ThreadRunsOnCallersMemory) {
    const size_t size = 256 * 1024;
    std::vector<char> buffer(size);
    arbrt::ThreadAttributes attributes;
    attributes.stackAddr = buffer.data();
    attributes.stackSize = size;
    StackProbe p;
    const arbrt::ThreadId t = arbrt::createThreadWith(attributes, probeStack, &p);
    ASSERT_TRUE(t);
    ASSERT_EQ(arbrt::join(t), 0);
    EXPECT_TRUE(p.found);
    EXPECT_GE(p.local, buffer.data());
    EXPECT_LT(p.local, buffer.data() + size);
    EXPECT_EQ(p.bounds.low, buffer.data());
    EXPECT_EQ(p.bounds.size, size);
    EXPECT_EQ(p.bounds.guard, 0u);
}

TEST_F(ThreadAttrs, StackAddr_NeverUnmappedOrReused) {
    // mmap'ed so that an munmap by the runtime would make the writes below fault.
    const size_t size = 64 * 1024;
    void* mem = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(mem, MAP_FAILED);
    arbrt::ThreadAttributes attributes = pinnedTo(0);
    attributes.stackAddr = mem;
    attributes.stackSize = size;
    StackProbe p;
    ASSERT_EQ(arbrt::join(arbrt::createThreadWith(attributes, probeStack, &p)), 0);
    // The context goes back to core 0's pool; its next thread must get a stack of its own.
    StackProbe q;
    ASSERT_EQ(arbrt::join(arbrt::createThreadWith(pinnedTo(0), probeStack, &q)), 0);
    EXPECT_TRUE(q.local < static_cast<char*>(mem) || q.local >= static_cast<char*>(mem) + size);
    EXPECT_EQ(q.bounds.guard, page());
    std::memset(mem, 0x5a, size);  // still ours
    munmap(mem, size);
}

TEST_F(ThreadAttrs, StackAddr_TooSmallIsEinval) {
    char small[1024];
    arbrt::ThreadAttributes attributes;
    attributes.stackAddr = small;
    attributes.stackSize = sizeof small;
    int err = 0;
    EXPECT_FALSE(arbrt::spawn(
        attributes, [](void*) -> void* { return nullptr; }, nullptr, &err));
    EXPECT_EQ(err, EINVAL);
}

TEST_F(ThreadAttrs, GuardSize_RoundedToPagesAndReported) {
    for (size_t guard : {size_t{0}, size_t{1}, 4 * page()}) {
        arbrt::ThreadAttributes attributes;
        attributes.stackSize = 128 * 1024;
        attributes.guardSize = guard;
        StackProbe p;
        ASSERT_EQ(arbrt::join(arbrt::createThreadWith(attributes, probeStack, &p)), 0);
        const size_t want = (guard + page() - 1) / page() * page();
        EXPECT_EQ(p.bounds.guard, want);
        EXPECT_EQ(p.bounds.size - p.bounds.guard, 128u * 1024);
        EXPECT_GE(p.local, static_cast<char*>(p.bounds.low) + want);
    }
}

TEST_F(ThreadAttrs, IsDetached_FollowsCreationAndDetach) {
    std::atomic<bool> go{false};
    arbrt::ThreadAttributes attributes;
    attributes.detached = true;
    std::atomic<bool> seenDetached{false};
    std::atomic<bool> done{false};
    arbrt::createThreadWith(attributes, [&] {
        seenDetached = arbrt::isDetached(arbrt::self());
        done = true;
    });
    ASSERT_TRUE(eventually([&] { return done.load(); }));
    EXPECT_TRUE(seenDetached.load());
    const arbrt::ThreadId t = arbrt::createThread([&] {
        while (!go.load()) arbrt::yield();
    });
    EXPECT_FALSE(arbrt::isDetached(t));
    ASSERT_EQ(arbrt::detach(t), 0);
    EXPECT_TRUE(arbrt::isDetached(t));
    go = true;
    ASSERT_TRUE(eventually([] { return arbrt::stats().liveThreads == 0; }));
}

TEST_F(ThreadAttrs, CpuClock_CountsRunningTimeOnly) {
    arbrt::enableCpuClocks();
    std::atomic<int> phase{0};
    const arbrt::ThreadId t = arbrt::createThreadWith(pinnedTo(1), [&] {
        const uint64_t start = arbrt::threadCpuNs(arbrt::self());
        while (arbrt::threadCpuNs(arbrt::self()) - start < 20'000'000) arbrt_test::burn(1000);
        phase = 1;
        arbrt::block();  // parked: its clock must stand still
        while (phase.load() != 2) arbrt::block();
    });
    ASSERT_TRUE(eventually([&] { return phase.load() == 1; }));
    ASSERT_TRUE(eventually([&] {  // parked once its clock stops moving between two reads
        const uint64_t a = arbrt::threadCpuNs(t);
        arbrt_test::burn(100000);
        return arbrt::threadCpuNs(t) == a;
    }));
    const uint64_t parked = arbrt::threadCpuNs(t);
    EXPECT_GE(parked, 20'000'000u);
    arbrt_test::burn(1'000'000);
    // Its ticks stand still; their conversion to ns may not: the monitor refines the TSC rate
    // (by parts per million) on its own schedule, soon after start-up. Running time would add
    // the burn's duration, far more than that.
    EXPECT_NEAR(double(arbrt::threadCpuNs(t)), double(parked), double(parked) * 1e-4);
    phase = 2;
    arbrt::signal(t);
    ASSERT_EQ(arbrt::join(t), 0);
}

TEST_F(ThreadAttrs, CpuClock_StartsAtZeroOnReusedContext) {
    arbrt::enableCpuClocks();
    uint64_t first = 0, second = ~uint64_t{0};
    ASSERT_EQ(arbrt::join(arbrt::createThreadWith(pinnedTo(0),
                                                  [&] {
                                                      arbrt_test::burn(5'000'000);
                                                      first = arbrt::threadCpuNs(arbrt::self());
                                                  })),
              0);
    ASSERT_EQ(arbrt::join(arbrt::createThreadWith(
                  pinnedTo(0), [&] { second = arbrt::threadCpuNs(arbrt::self()); })),
              0);
    EXPECT_GT(first, 0u);
    EXPECT_LT(second, first);
}

TEST_F(ThreadAttrs, CpuClock_CallerCountsFromFirstUse) {
    // A thread that never switches still sees its own clock advance once it asked for it.
    uint64_t burned = 0;
    ASSERT_EQ(arbrt::join(arbrt::createThread([&] {
                  const uint64_t start = arbrt::threadCpuNs(arbrt::self());
                  while (arbrt::threadCpuNs(arbrt::self()) - start < 5'000'000) {
                      arbrt_test::burn(1000);
                  }
                  burned = arbrt::threadCpuNs(arbrt::self()) - start;
              })),
              0);
    EXPECT_GE(burned, 5'000'000u);
}

TEST_F(ThreadAttrs, ThreadAtSlot_LiveThreadsOnly) {
    std::atomic<bool> go{false};
    const arbrt::ThreadId t = arbrt::createThread([&] {
        while (!go.load()) arbrt::yield();
    });
    const uint32_t slot = arbrt::threadSlot(t);
    EXPECT_EQ(arbrt::threadAtSlot(slot), t);
    go = true;
    ASSERT_EQ(arbrt::join(t), 0);
    const arbrt::ThreadId after = arbrt::threadAtSlot(slot);
    EXPECT_FALSE(after == t);
    EXPECT_FALSE(arbrt::threadAtSlot(0xffffff00u));
}

std::atomic<int> gResets{0};
std::atomic<uint64_t> gResetValue{0};

TEST_F(ThreadAttrs, ExtensionReset_SeesPreviousContentsBeforeZeroing) {
    arbrt::setExtensionReset([](void* ext) {
        uint64_t v;
        std::memcpy(&v, ext, sizeof v);
        if (v == 0x1234) gResetValue = v;
        gResets.fetch_add(1);
    });
    ASSERT_EQ(arbrt::join(arbrt::createThreadWith(pinnedTo(0),
                                                  [] {
                                                      const uint64_t v = 0x1234;
                                                      std::memcpy(arbrt::selfExtension(), &v,
                                                                  sizeof v);
                                                  })),
              0);
    uint64_t seen = 1;
    ASSERT_EQ(arbrt::join(arbrt::createThreadWith(
                  pinnedTo(0), [&] { std::memcpy(&seen, arbrt::selfExtension(), sizeof seen); })),
              0);
    arbrt::setExtensionReset(nullptr);
    EXPECT_EQ(seen, 0u);
    EXPECT_GE(gResets.load(), 2);
    EXPECT_EQ(gResetValue.load(), 0x1234u);
}

}  // namespace
