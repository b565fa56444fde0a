// Whether an address lies in memory shared with other processes (MAP_SHARED, System V shm), for
// syscall(SYS_futex) without FUTEX_PRIVATE_FLAG (futex.cc): such futexes go to the kernel.
//
// The answer comes from a table of shared ranges read from /proc/self/maps, rebuilt at the first
// lookup after the mappings may have changed: every call that can add or remove a shared mapping
// (mmap, munmap, mremap, shmat, shmdt, their syscall() forms; mappings.cc, futex.cc) and the fork
// child bump a generation counter, one atomic increment. A mapping made behind the library's back
// (a raw `syscall` instruction, glibc's internal mmap in sem_open or nscd) is not seen until the
// next bump: its non-private futexes are emulated in-process until then.
#pragma once

#include <atomic>
#include <cstdint>

namespace arbrun {

// Starts at 1; the table records the generation it was built for (0: never built).
extern std::atomic<uint64_t> gMappingsGeneration;

// After a call that may have added or removed a shared mapping. Relaxed: a thread that learns of
// the new mapping from the caller synchronises with the caller afterwards, which orders this
// increment before its lookups.
inline void noteMappingsChanged() {
    gMappingsGeneration.fetch_add(1, std::memory_order_relaxed);
}

// Whether `address` lies in a shared mapping. Lock-free when the table is current; otherwise one
// caller rebuilds it (raw system calls, no allocation, its kernel thread's signals blocked
// meanwhile) while others wait for it. Safe on any thread and TCB, and in signal handlers.
bool inSharedMapping(const void* address);

// Fork child: a rebuild that another thread of the parent had under way never finishes here.
void sharedMappingsAfterFork();

}  // namespace arbrun
