// The shared-range table behind inSharedMapping() (shared_memory.h).
#include "sync/shared_memory.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>

#include "io/raw_syscall.h"
#include "libc/shim.h"
#include "sync/shared_ranges.h"

namespace arbrun {

constinit std::atomic<uint64_t> gMappingsGeneration{1};

namespace {

constexpr size_t kMaxRanges = 4096;  // runs of shared mappings; more are treated as private
constexpr int kSpinsBeforeYield = 64;

// The cached ranges under a sequence lock: `sequence` is odd while one thread rebuilds the table
// (the only writer then); readers load every field atomically (relaxed) and retry when `sequence`
// changed under them. `builtFor`: the generation read before /proc/self/maps was, so a table is
// never newer than its generation says.
struct Table {
    std::atomic<uint64_t> sequence{0};
    std::atomic<uint64_t> builtFor{0};
    std::atomic<size_t> count{0};
    AddressRange ranges[kMaxRanges]{};
};
constinit Table gTable;

std::atomic<bool> gOverflowReported{false}, gUnreadableReported{false};

AddressRange rangeAt(size_t i) {
    AddressRange& r = gTable.ranges[i];
    return AddressRange{std::atomic_ref<uintptr_t>(r.begin).load(std::memory_order_relaxed),
                        std::atomic_ref<uintptr_t>(r.end).load(std::memory_order_relaxed)};
}

bool tableContains(uintptr_t address) {
    const size_t n = std::min(gTable.count.load(std::memory_order_relaxed), kMaxRanges);
    return rangesContain(n, address, rangeAt);
}

struct Fill {
    size_t count = 0;
    bool overflow = false;
    bool unreadable = false;
};

// MapsParser's output: the next slot of the table (the writer holds the sequence lock).
void store(void* context, AddressRange range) {
    auto* fill = static_cast<Fill*>(context);
    if (fill->count == kMaxRanges) {
        fill->overflow = true;
        return;
    }
    AddressRange& r = gTable.ranges[fill->count++];
    std::atomic_ref<uintptr_t>(r.begin).store(range.begin, std::memory_order_relaxed);
    std::atomic_ref<uintptr_t>(r.end).store(range.end, std::memory_order_relaxed);
}

// Feeds /proc/self/maps to `parser`; false if it cannot be read (the table is then empty).
bool readMaps(MapsParser* parser) {
    const long fd = rawSyscall(SYS_openat, AT_FDCWD, reinterpret_cast<long>("/proc/self/maps"),
                               O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buffer[2048];
    bool ok = true;
    for (;;) {
        const long n = rawSyscall(SYS_read, fd, reinterpret_cast<long>(buffer), sizeof buffer);
        if (n == -EINTR) continue;
        if (n <= 0) {
            ok = n == 0;
            break;
        }
        parser->feed(buffer, size_t(n));
    }
    rawSyscall(SYS_close, fd);
    parser->finish();
    return ok;
}

// Rebuilds the table for `generation` (sequence lock held) with every signal blocked on this
// kernel thread: a handler that made a shared futex call here would wait for this very rebuild.
// Returns whether `address` is shared according to the new table.
bool rebuild(uint64_t generation, uintptr_t address, Fill* fill) {
    const uint64_t all = ~uint64_t{0};
    uint64_t saved = 0;
    rawSyscall(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&all),
               reinterpret_cast<long>(&saved), sizeof(uint64_t));
    MapsParser parser(store, fill);
    if (!readMaps(&parser)) {
        fill->count = 0;
        fill->unreadable = true;
    }
    gTable.count.store(fill->count, std::memory_order_relaxed);
    gTable.builtFor.store(generation, std::memory_order_relaxed);
    const bool shared = tableContains(address);
    rawSyscall(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&saved), 0,
               sizeof(uint64_t));
    return shared;
}

// Says once why some shared futexes may be emulated in-process (after the lock is released).
void reportOnce(const Fill& fill) {
    if (fill.unreadable && !gUnreadableReported.exchange(true)) {
        logWarning("cannot read /proc/self/maps: futexes in shared memory stay in-process");
    }
    if (fill.overflow && !gOverflowReported.exchange(true)) {
        logWarning("more than %zu shared memory ranges: futexes beyond them stay in-process",
                   kMaxRanges);
    }
}

}  // namespace

bool inSharedMapping(const void* address) {
    const auto a = reinterpret_cast<uintptr_t>(address);
    for (int spins = 0;; ++spins) {
        const uint64_t generation = gMappingsGeneration.load(std::memory_order_acquire);
        const uint64_t s = gTable.sequence.load(std::memory_order_acquire);
        if (!(s & 1)) {
            if (gTable.builtFor.load(std::memory_order_relaxed) >= generation) {
                const bool shared = tableContains(a);
                std::atomic_thread_fence(std::memory_order_acquire);
                if (gTable.sequence.load(std::memory_order_relaxed) == s) return shared;
                continue;
            }
            uint64_t expected = s;
            if (gTable.sequence.compare_exchange_strong(expected, s + 1,
                                                        std::memory_order_relaxed)) {
                std::atomic_thread_fence(std::memory_order_release);  // odd before any slot
                Fill fill;
                const bool shared = rebuild(generation, a, &fill);
                gTable.sequence.store(s + 2, std::memory_order_release);
                reportOnce(fill);
                // This table is good for our caller even if the generation moved meanwhile: a
                // mapping the caller's address can lie in was published to it before the call.
                return shared;
            }
            continue;
        }
        __builtin_ia32_pause();
        if (spins % kSpinsBeforeYield == kSpinsBeforeYield - 1) rawSyscall(SYS_sched_yield);
    }
}

void sharedMappingsAfterFork() {
    const uint64_t s = gTable.sequence.load(std::memory_order_relaxed);
    if (s & 1) gTable.sequence.store(s + 1, std::memory_order_relaxed);
    noteMappingsChanged();
}

}  // namespace arbrun
