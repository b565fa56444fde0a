// Failure paths of the runtime's system calls, injected through sys.h's interceptor against the
// real scheduler: an interceptor answers chosen calls (ENOMEM from mmap, a spurious EINTR from a
// futex wait) and lets every other call through.
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <vector>

#include "arbrt/io.h"
#include "platform/sys.h"
#include "sched/context_pool.h"
#include "test_util.h"

namespace {

using arbrt::detail::gSyscallInterceptor;
using arbrt::detail::SyscallInterceptor;

// Installs an interceptor for one scope; the test joins everything that could see it before the
// scope ends.
class ScopedInterceptor {
  public:
    explicit ScopedInterceptor(SyscallInterceptor hook) { gSyscallInterceptor.store(hook); }
    ~ScopedInterceptor() { gSyscallInterceptor.store(nullptr); }
    ScopedInterceptor(const ScopedInterceptor&) = delete;
    ScopedInterceptor& operator=(const ScopedInterceptor&) = delete;
};

// Stack sizes no pooled context has (each test its own: contexts and their stacks outlive a
// runtime's stop), so creating a thread with one must map a fresh stack.
constexpr size_t kOddStack = 3 * 1024 * 1024 + 4096 * 7;
constexpr size_t kOtherOddStack = 3 * 1024 * 1024 + 4096 * 11;

std::atomic<int> gMmapsRefused{0};
std::atomic<int> gMprotectsRefused{0};
std::atomic<long> gUnmappedBytes{0};
std::atomic<long> gMappedBytes{0};

// Refuses every mapping of kOddStack + a guard page, counting the refusals.
bool refuseOddStackMaps(long nr, const long args[6], long* result) {
    if (nr == SYS_mmap && size_t(args[1]) >= kOddStack && size_t(args[1]) <= kOddStack + 65536) {
        gMmapsRefused.fetch_add(1);
        *result = -ENOMEM;
        return true;
    }
    return false;
}

// Lets the odd stack's mapping through (recording its size) but refuses its guard page, and records
// what is unmapped afterwards: mapStack must give back exactly what it mapped.
bool refuseGuardPages(long nr, const long args[6], long* result) {
    if (nr == SYS_mmap && size_t(args[1]) >= kOtherOddStack &&
        size_t(args[1]) <= kOtherOddStack + 65536) {
        gMappedBytes.store(args[1]);
        return false;
    }
    const bool guard = (nr == SYS_mprotect && args[2] == PROT_NONE) ||
                       (nr == SYS_madvise && args[2] == 102 /*MADV_GUARD_INSTALL*/);
    if (guard && gMappedBytes.load() != 0) {
        gMprotectsRefused.fetch_add(1);
        *result = -ENOMEM;
        return true;
    }
    if (nr == SYS_munmap && args[1] == gMappedBytes.load()) gUnmappedBytes.store(args[1]);
    return false;
}

std::atomic<int> gStackMapsRefused{0};

// Refuses every stack mapping (MAP_STACK): creates, and refills of the pool's reserve by idle
// carriers, can then make no new stack.
bool refuseStackMaps(long nr, const long args[6], long* result) {
    if (nr == SYS_mmap && (args[3] & MAP_STACK)) {
        gStackMapsRefused.fetch_add(1);
        *result = -ENOMEM;
        return true;
    }
    return false;
}

std::atomic<uint64_t> gFutexWaits{0};

// Every other futex wait returns EINTR at once without sleeping: the runtime's sleepers must
// re-check their condition and wait again, losing no wake-up.
bool spuriousFutexWakeups(long nr, const long args[6], long* result) {
    if (nr == SYS_futex && (args[1] & 0x7f) == 0 /*FUTEX_WAIT*/ &&
        gFutexWaits.fetch_add(1, std::memory_order_relaxed) % 2 == 0) {
        *result = -EINTR;
        return true;
    }
    return false;
}

std::atomic<uint64_t> gEpollWaits{0};

// Every other wait on the runtime's epoll (the netpolling carrier's, the monitor's look) returns
// EINTR at once: readiness must still reach every waiter.
bool spuriousEpollWakeups(long nr, const long args[6], long* result) {
    if ((nr == SYS_epoll_wait || nr == 441 /*epoll_pwait2*/) &&
        gEpollWaits.fetch_add(1, std::memory_order_relaxed) % 2 == 0) {
        *result = -EINTR;
        return true;
    }
    return false;
}

class SysFault : public arbrt_test::RuntimeTest<3> {};

TEST_F(SysFault, MapStack_MmapRefusedMakesCreateFailWithEagainAndTheRuntimeCarriesOn) {
    gMmapsRefused.store(0);
    arbrt::ThreadAttributes attributes;
    attributes.stackSize = kOddStack;
    int err = 0;
    {
        ScopedInterceptor refuse(refuseOddStackMaps);
        const arbrt::ThreadId t = arbrt::spawn(
            attributes, [](void*) -> void* { return nullptr; }, nullptr, &err);
        EXPECT_FALSE(t);
        EXPECT_EQ(err, EAGAIN);
        if (t) arbrt::join(t);
    }
    EXPECT_GE(gMmapsRefused.load(), 1);
    std::atomic<bool> ran{false};
    const arbrt::ThreadId t = arbrt::createThreadWith(attributes, [&] { ran.store(true); });
    ASSERT_TRUE(t);
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_TRUE(ran.load());
}

TEST_F(SysFault, MapStack_GuardRefusedUnmapsExactlyWhatItMapped) {
    gMappedBytes.store(0);
    gUnmappedBytes.store(0);
    gMprotectsRefused.store(0);
    arbrt::ThreadAttributes attributes;
    attributes.stackSize = kOtherOddStack;
    int err = 0;
    {
        ScopedInterceptor refuse(refuseGuardPages);
        const arbrt::ThreadId t = arbrt::spawn(
            attributes, [](void*) -> void* { return nullptr; }, nullptr, &err);
        EXPECT_FALSE(t);
        EXPECT_EQ(err, EAGAIN);
        if (t) arbrt::join(t);
    }
    EXPECT_EQ(gMprotectsRefused.load(), 1);
    EXPECT_NE(gMappedBytes.load(), 0);
    EXPECT_EQ(gUnmappedBytes.load(), gMappedBytes.load());
}

TEST_F(SysFault, Refill_MmapRefusedFailsCreatesOnlyWhenNoEquippedContextIsLeft) {
    // Threads stay alive until a create fails: every pooled stack is in use by then, and the
    // creates beyond the first dozens made the pool ask idle carriers for a reserve, whose
    // refills now fail too.
    gStackMapsRefused.store(0);
    int err = 0;
    size_t created = 0, equippedBefore = 0, equippedAtFailure = ~size_t{0};
    arbrt::Semaphore release;
    std::vector<arbrt::ThreadId> ids;
    arbrt::ThreadId driver = arbrt::createThreadWith({}, [&] {
        // First a burst of live threads beyond kReserveAfterContexts: the pool wants a reserve,
        // and holds the burst's contexts afterwards.
        std::vector<arbrt::ThreadId> burst;
        for (size_t i = 0; i < 4 * arbrt::detail::kReserveAfterContexts; ++i) {
            burst.push_back(arbrt::createThreadWith({}, [&] { release.wait(); }));
            ASSERT_TRUE(burst.back());
        }
        for (size_t i = 0; i < burst.size(); ++i) release.post();
        for (arbrt::ThreadId id : burst) ASSERT_EQ(arbrt::join(id), 0);
        ASSERT_GT(arbrt::detail::sharedPoolCounts().reserveTarget, 0u);
        equippedBefore = arbrt::detail::sharedPoolCounts().equipped;
        {
            ScopedInterceptor refuse(refuseStackMaps);
            for (;;) {
                const arbrt::ThreadId t = arbrt::spawn(
                    {},
                    [](void* r) -> void* {
                        static_cast<arbrt::Semaphore*>(r)->wait();
                        return nullptr;
                    },
                    &release, &err);
                if (!t) {
                    equippedAtFailure = arbrt::detail::sharedPoolCounts().equipped;
                    break;
                }
                ids.push_back(t);
                ++created;
                if (created > 100000) break;  // never: the refusal would have been ignored
            }
        }
        // The runtime carries on: with mappings allowed again, a create succeeds.
        std::atomic<bool> ran{false};
        const arbrt::ThreadId t = arbrt::createThreadWith({}, [&] { ran.store(true); });
        EXPECT_TRUE(t);
        if (t) {
            EXPECT_EQ(arbrt::join(t), 0);
        }
        EXPECT_TRUE(ran.load());
        for (size_t i = 0; i < ids.size(); ++i) release.post();
        for (arbrt::ThreadId id : ids) EXPECT_EQ(arbrt::join(id), 0);
    });
    ASSERT_TRUE(driver);
    ASSERT_EQ(arbrt::join(driver), 0);
    EXPECT_EQ(err, EAGAIN);
    EXPECT_GE(created, equippedBefore);
    EXPECT_EQ(equippedAtFailure, 0u);
    EXPECT_GE(gStackMapsRefused.load(), 1);
}

// Sleeping carriers, the monitor and kernel-thread waiters all see spurious EINTRs while user
// threads and a kernel thread hand a token around through the parking lot many times.
TEST_F(SysFault, FutexWait_SpuriousEintrLosesNoWakeup) {
    gFutexWaits.store(0);
    constexpr int kThreads = 6;
    constexpr int kRounds = 3000;
    arbrt::Mutex mutex;
    arbrt::CondVar turnChanged;
    int turn = 0;  // guarded by mutex
    auto player = [&](int me) {
        for (int r = 0; r < kRounds; ++r) {
            mutex.lock();
            while (turn % (kThreads + 1) != me) turnChanged.wait(mutex);
            ++turn;
            turnChanged.notifyAll();
            mutex.unlock();
        }
    };
    {
        ScopedInterceptor spurious(spuriousFutexWakeups);
        std::vector<arbrt::ThreadId> threads;
        for (int i = 0; i < kThreads; ++i) threads.push_back(arbrt::createThread(player, i));
        player(kThreads);  // this kernel thread plays too: it waits on a real futex
        for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
    }
    EXPECT_EQ(turn, (kThreads + 1) * kRounds);
    EXPECT_GT(gFutexWaits.load(), 0u) << "no futex wait was intercepted: the test tested nothing";
}

// Two user threads bounce a byte through two pipes, each waiting for readability through the
// runtime's epoll, while epoll waits fail spuriously: every byte must arrive.
TEST_F(SysFault, EpollWait_SpuriousEintrLosesNoReadiness) {
    gEpollWaits.store(0);
    int ab[2], ba[2];
    ASSERT_EQ(pipe(ab), 0);
    ASSERT_EQ(pipe(ba), 0);
    constexpr int kRounds = 2000;
    auto bounce = [](int in, int out, bool first) {
        char byte = 'x';
        for (int r = 0; r < kRounds; ++r) {
            if (!first || r > 0) {
                arbrt::FdInterest interest{in, EPOLLIN, 0};
                if (arbrt::waitForFds(&interest, 1, arbrt::kWaitForever, nullptr) != 1)
                    return false;
                if (read(in, &byte, 1) != 1) return false;
            }
            if (write(out, &byte, 1) != 1) return false;
        }
        return true;
    };
    std::atomic<bool> okA{false}, okB{false};
    {
        ScopedInterceptor spurious(spuriousEpollWakeups);
        const arbrt::ThreadId a =
            arbrt::createThread([&] { okA.store(bounce(ba[0], ab[1], true)); });
        const arbrt::ThreadId b =
            arbrt::createThread([&] { okB.store(bounce(ab[0], ba[1], false)); });
        EXPECT_EQ(arbrt::join(a), 0);
        EXPECT_EQ(arbrt::join(b), 0);
    }
    EXPECT_TRUE(okA.load());
    EXPECT_TRUE(okB.load());
    EXPECT_GT(gEpollWaits.load(), 0u) << "no epoll wait was intercepted: the test tested nothing";
    for (int fd : {ab[0], ab[1], ba[0], ba[1]}) close(fd);
}

}  // namespace
