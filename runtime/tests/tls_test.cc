// Per-user-thread TLS: errno, __thread and thread_local (with destructors) belong to the user
// thread, across yields, sleeps, blocking on Mutex/CondVar and migration between cores; a new
// thread on a recycled context starts from the TLS initial values; malloc works from many threads.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <vector>

#include "platform/arch.h"
#include "test_util.h"
#include "tls/glibc_layout.h"

namespace {

using arbrt_test::eventually;
using arbrt_test::kMicrosecond;
using arbrt_test::pinnedTo;

class Tls : public arbrt_test::RuntimeTest<4> {};

__thread int gPlainTls = 17;
thread_local int gLocalTls = 42;

constexpr int kMaxTracked = 1024;
std::atomic<int> gConstructed{0};
std::atomic<int> gDestroyedElsewhere{0};  // destructor ran on another thread (or no user thread)
std::atomic<int> gDestroyed[kMaxTracked];

// A thread_local with a constructor and a destructor. Never touched by the kernel thread that
// runs the tests (its destructor would run at process exit).
struct Tracked {
    Tracked() : owner(arbrt::self()) { gConstructed.fetch_add(1); }
    ~Tracked() {
        if (!(arbrt::self() == owner) || !owner || arbrt::currentCore() < 0) {
            gDestroyedElsewhere.fetch_add(1);
        }
        if (index >= 0 && index < kMaxTracked) gDestroyed[index].fetch_add(1);
    }
    arbrt::ThreadId owner;
    int index = -1;
    int value = 7;
};
thread_local Tracked gTracked;

// Tracked's counters start from zero in every test (the binary may run several in one process).
void resetTracking() {
    gConstructed = 0;
    gDestroyedElsewhere = 0;
    for (auto& d : gDestroyed) d = 0;
}

TEST_F(Tls, Values_PerThreadAcrossYieldSleepBlockAndMigration) {
    constexpr int kThreads = 200, kRounds = 20;
    resetTracking();
    arbrt::Mutex mutex;
    arbrt::CondVar roundDone;
    int arrived = 0, round = 0;  // guarded by mutex
    long shared = 0;             // guarded by mutex
    std::atomic<int> corrupt{0}, migrations{0};
    std::vector<arbrt::ThreadId> threads;
    for (int i = 0; i < kThreads; ++i) {
        // All start on core 0: the other cores only get work by stealing (migration).
        threads.push_back(arbrt::createThreadOn(0, [&, i] {
            errno = 1000 + i;
            gPlainTls = i;
            gLocalTls = -i;
            gTracked.index = i;
            gTracked.value = 3 * i;
            int lastCore = arbrt::currentCore();
            auto verify = [&] {
                if (errno != 1000 + i || gPlainTls != i || gLocalTls != -i ||
                    gTracked.value != 3 * i || gTracked.index != i) {
                    corrupt.fetch_add(1);
                }
                const int core = arbrt::currentCore();
                if (core != lastCore) {
                    migrations.fetch_add(1);
                    lastCore = core;
                }
            };
            for (int r = 0; r < kRounds; ++r) {
                arbrt::yield();
                verify();
                arbrt::sleepFor(uint64_t(i % 4) * kMicrosecond);
                verify();
                mutex.lock();
                verify();
                ++shared;
                if (i % 8 == 0) arbrt::yield();  // hold it across a switch: others block on it
                mutex.unlock();
                verify();
                mutex.lock();  // a CondVar barrier: all but the last block in wait()
                if (++arrived == kThreads) {
                    arrived = 0;
                    ++round;
                    roundDone.notifyAll();
                } else {
                    const int mine = round;
                    while (round == mine) roundDone.wait(mutex);
                }
                verify();
                mutex.unlock();
            }
        }));
    }
    for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(corrupt.load(), 0);
    EXPECT_EQ(shared, long(kThreads) * kRounds);
    EXPECT_GT(migrations.load(), 0) << "no thread changed cores: migration was not exercised";
    EXPECT_GT(arbrt::stats().steals, 0u);
    EXPECT_EQ(gConstructed.load(), kThreads);
    EXPECT_EQ(gDestroyedElsewhere.load(), 0);
    for (int i = 0; i < kThreads; ++i) EXPECT_EQ(gDestroyed[i].load(), 1) << i;
}

TEST_F(Tls, Values_KernelThreadKeepsItsOwn) {
    gPlainTls = 99;
    gLocalTls = 98;
    errno = ERANGE;
    std::vector<arbrt::ThreadId> threads;
    for (int i = 0; i < 32; ++i) {
        threads.push_back(arbrt::createThread([i] {
            gPlainTls = -i;
            gLocalTls = -i;
            errno = EIO;
            arbrt::yield();
        }));
    }
    for (arbrt::ThreadId t : threads) arbrt::join(t);
    EXPECT_EQ(errno, ERANGE);
    EXPECT_EQ(gPlainTls, 99);
    EXPECT_EQ(gLocalTls, 98);
    gPlainTls = 17;
    gLocalTls = 42;
    errno = 0;
}

TEST_F(Tls, Errno_PerThreadOnOneCore) {
    // Two threads on one core interleave by yield; each keeps its errno.
    std::atomic<int> wrong{0};
    auto body = [&](int value) {
        errno = value;
        for (int i = 0; i < 1'000; ++i) {
            arbrt::yield();
            if (errno != value) wrong.fetch_add(1);
            errno = value;
        }
    };
    const arbrt::ThreadId a = arbrt::createThreadWith(pinnedTo(2), body, EAGAIN);
    const arbrt::ThreadId b = arbrt::createThreadWith(pinnedTo(2), body, ENOMEM);
    EXPECT_EQ(arbrt::join(a), 0);
    EXPECT_EQ(arbrt::join(b), 0);
    EXPECT_EQ(wrong.load(), 0);
}

TEST_F(Tls, ThreadLocalDestructor_RunsOncePerThreadOnThatThread) {
    constexpr int kThreads = 300;
    resetTracking();
    arbrt::ThreadAttributes detached;
    detached.detached = true;
    std::vector<arbrt::ThreadId> joinable;
    for (int i = 0; i < kThreads; ++i) {
        const int how = i % 3;  // 0: detached, 1: ends with exit(), 2: returns
        auto body = [i, how] {
            gTracked.index = i;
            arbrt::yield();
            arbrt::sleepFor(uint64_t(i % 5) * 100);
            if (how == 1) arbrt::exit(nullptr);
        };
        if (how == 0) {
            ASSERT_TRUE(arbrt::createThreadWith(detached, body));
        } else {
            joinable.push_back(arbrt::createThread(body));
        }
    }
    for (arbrt::ThreadId t : joinable) EXPECT_EQ(arbrt::join(t), 0);
    ASSERT_TRUE(eventually([] { return arbrt::stats().liveThreads == 0; }));
    EXPECT_EQ(gConstructed.load(), kThreads);
    EXPECT_EQ(gDestroyedElsewhere.load(), 0);
    for (int i = 0; i < kThreads; ++i) EXPECT_EQ(gDestroyed[i].load(), 1) << "thread " << i;
}

TEST_F(Tls, InitialValues_FreshOnRecycledContext) {
    // Sequential threads on one core recycle contexts; each must see the initial TLS values even
    // though its predecessor changed them.
    constexpr int kThreads = 100;
    resetTracking();
    std::atomic<int> notFresh{0};
    std::map<void*, int> uses;  // context -> threads that ran in it
    const arbrt::ThreadId driver = arbrt::createThreadWith(pinnedTo(1), [&] {
        arbrt::ThreadAttributes detached = pinnedTo(1);
        detached.detached = true;
        for (int i = 0; i < kThreads; ++i) {
            auto body = [&, i] {
                if (errno != 0 || gPlainTls != 17 || gLocalTls != 42 || gTracked.value != 7 ||
                    gTracked.index != -1) {
                    notFresh.fetch_add(1);
                }
                gTracked.index = i;
                errno = EIO;
                gPlainTls = -1;
                gLocalTls = -1;
                gTracked.value = -1;
                if (i % 4 == 3) arbrt::exit(nullptr);
            };
            const bool isDetached = i % 4 == 1;
            const arbrt::ThreadId t =
                arbrt::createThreadWith(isDetached ? detached : pinnedTo(1), body);
            ++uses[t.context];
            if (isDetached) {
                // It finishes (and frees itself) before we run again: one core, FIFO.
                arbrt::yield();
                arbrt::yield();
            } else {
                arbrt::join(t);
            }
        }
    });
    ASSERT_EQ(arbrt::join(driver), 0);
    ASSERT_TRUE(eventually([] { return arbrt::stats().liveThreads == 0; }));
    int recycled = 0;
    for (const auto& [context, n] : uses) recycled += n - 1;
    ASSERT_GT(recycled, 0) << "no context was recycled: the test would prove nothing";
    EXPECT_EQ(notFresh.load(), 0);
    EXPECT_EQ(gConstructed.load(), kThreads);
    EXPECT_EQ(gDestroyedElsewhere.load(), 0);
    for (int i = 0; i < kThreads; ++i) EXPECT_EQ(gDestroyed[i].load(), 1) << "thread " << i;
}

// What glibc's fields in the calling thread's TCB say of its stack (glibc reads them itself: the
// alloca cutoff of its functions is a quarter of stackblock_size; pthread_getattr_np reports
// them), and what the runtime says (the context), from inside the thread.
struct GlibcStackView {
    void* block = nullptr;  // stackblock: the stack's lowest address, guard included
    size_t blockSize = 0;   // stackblock_size
    size_t guard = 0;       // guardsize
    arbrt::StackBounds runtime;
    arbrt::ThreadId self;
    bool ok = false;
};

void viewGlibcStack(GlibcStackView* v) {
    using arbrt::detail::field;
    void* tcb = arbrt::detail::threadPointer();
    v->block = field<void*>(tcb, arbrt::detail::kStackBlock);
    v->blockSize = field<size_t>(tcb, arbrt::detail::kStackBlockSize);
    v->guard = field<size_t>(tcb, arbrt::detail::kGuardSize);
    v->self = arbrt::self();
    v->ok = arbrt::threadStack(v->self, &v->runtime);
}

TEST_F(Tls, GlibcStackFields_FollowEachOccupantOfARecycledContext) {
    // One core, one thread at a time: each create takes the context the last thread left. A TCB
    // whose previous occupant had the same stack is not re-prepared (GlibcTcb::preparedFor); one
    // whose stack changed (size, or the caller's memory) must be, or glibc would describe the
    // previous stack.
    std::vector<char> callers(256 * 1024);
    const size_t sizes[] = {0, 0, 192 * 1024, 192 * 1024, 0, 1, 0, 1, 1, 0};  // 1: callers
    std::map<void*, int> uses;
    int wrong = 0, checked = 0;
    const arbrt::ThreadId driver = arbrt::createThreadWith(pinnedTo(2), [&] {
        for (size_t size : sizes) {
            arbrt::ThreadAttributes attributes = pinnedTo(2);
            if (size == 1) {
                attributes.stackAddr = callers.data();
                attributes.stackSize = callers.size();
            } else {
                attributes.stackSize = size;
            }
            GlibcStackView v;
            const arbrt::ThreadId t = arbrt::createThreadWith(attributes, viewGlibcStack, &v);
            if (!t || arbrt::join(t) != 0 || !v.ok) {
                ++wrong;
                continue;
            }
            ++uses[t.context];
            ++checked;
            if (v.block != v.runtime.low || v.blockSize != v.runtime.size ||
                v.guard != v.runtime.guard || !(v.self == t)) {
                ++wrong;
            }
            if (size == 1 && v.block != callers.data()) ++wrong;
        }
    });
    ASSERT_EQ(arbrt::join(driver), 0);
    int recycled = 0;
    for (const auto& [context, n] : uses) recycled += n - 1;
    ASSERT_GT(recycled, 4) << "contexts were not recycled: the test would prove nothing";
    EXPECT_EQ(checked, int(std::size(sizes)));
    EXPECT_EQ(wrong, 0);
}

// A block handed between threads: who filled it and with what.
struct Parcel {
    unsigned char* data;
    size_t size;
    unsigned char pattern;
};

// True if every byte of the parcel still holds its pattern.
bool intact(const Parcel& p) {
    for (size_t i = 0; i < p.size; ++i) {
        if (p.data[i] != p.pattern) return false;
    }
    return true;
}

TEST_F(Tls, Malloc_ManyThreadsIncludingCrossThreadFree) {
    constexpr int kThreads = 64, kIterations = 400;
    arbrt::Mutex mutex;
    std::vector<Parcel>
        mailbox;  // guarded by mutex: blocks allocated by one thread, freed by another
    std::atomic<int> damaged{0};
    std::vector<arbrt::ThreadId> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.push_back(arbrt::createThread([&, t] {
            for (int k = 0; k < kIterations; ++k) {
                const size_t size = size_t(16) << (k % 12);  // 16 B .. 32 KiB
                const auto pattern = static_cast<unsigned char>(t * 31 + k);
                auto* data = static_cast<unsigned char*>(std::malloc(size));
                if (!data) {
                    damaged.fetch_add(1);
                    continue;
                }
                std::memset(data, pattern, size);
                if (k % 8 == 0) arbrt::yield();
                Parcel mine{data, size, pattern};
                if (!intact(mine)) damaged.fetch_add(1);
                if (k % 4 == 0) {
                    mutex.lock();
                    mailbox.push_back(mine);
                    mutex.unlock();
                } else {
                    std::free(data);
                }
                mutex.lock();
                Parcel theirs{nullptr, 0, 0};
                if (!mailbox.empty() && k % 4 == 2) {
                    theirs = mailbox.back();
                    mailbox.pop_back();
                }
                mutex.unlock();
                if (theirs.data) {
                    if (!intact(theirs)) damaged.fetch_add(1);
                    std::free(theirs.data);
                }
            }
        }));
    }
    for (arbrt::ThreadId t : threads) EXPECT_EQ(arbrt::join(t), 0);
    for (const Parcel& p : mailbox) {
        EXPECT_TRUE(intact(p));
        std::free(p.data);
    }
    EXPECT_EQ(damaged.load(), 0);
}

}  // namespace
