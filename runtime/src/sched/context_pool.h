// Pools of thread contexts. A context keeps its stack and TCB while pooled, so creating a thread on
// a warm pool costs no mmap and no TLS allocation. Contexts themselves are never freed (stale
// handles may still read them). An exited thread's context always goes back to a pool with its
// stack and TCB (a program that keeps thousands of threads and replaces them, a thread-per-
// connection server, creates at pool speed); the monitor trims what the program did not reuse:
// pooled contexts beyond RuntimeOptions::pooledContextsPerCore per core that sat unused through a
// whole trim period lose their stacks and TCBs (Go's scavenger: memory goes back once it is
// clearly not needed, never on the create or exit path).
#pragma once

#include <cstddef>
#include <cstdint>

#include "arbrt/sync.h"
#include "sched/context.h"

namespace arbrt::detail {

// Per-core cache: touched only by the core's own carrier, so no lock.
struct ContextCache {
    ThreadContext* head = nullptr;
    size_t count = 0;
};

// The stack a new thread asks for.
struct StackRequest {
    size_t usable = 0;        // bytes above the guard (rounded up to pages for a stack we map)
    size_t guard = 0;         // bytes of PROT_NONE guard below it (rounded up to pages)
    void* userLow = nullptr;  // non-null: run on the caller's [userLow, userLow + usable), no guard
};

// Takes a context with the requested stack and a TCB, from the calling carrier's cache, else the
// shared pool, else newly made. Null when memory or address space is exhausted.
ThreadContext* acquireContext(const StackRequest& stack);
// Returns a context whose thread has finished (its stack is no longer in use) and bumps its
// generation.
void releaseContext(ThreadContext* t);
// The context numbered `slot` (ThreadContext::slot), or null if none has that number yet.
// Lock-free: contexts are never freed, so the pointer stays valid.
ThreadContext* contextAtSlot(uint32_t slot);
// Moves every cached context of `cache` to the shared pool (when the runtime stops).
void flushCache(ContextCache* cache);

// How often the monitor looks at the shared pool's use, and how many stacks and TCBs it releases
// per look at most (an munmap costs microseconds: the monitor must not stall its other duties).
constexpr uint64_t kPoolTrimPeriodNs = 1'000'000'000;
constexpr size_t kPoolTrimChunk = 64;

// Pure: how many of the shared pool's `count` equipped contexts to strip at the end of a trim
// period in which it never held fewer than `lowWater` (those sat unused throughout), keeping
// `keep` (the configured pool size) whatever their use.
inline size_t contextsToTrim(size_t lowWater, size_t count, size_t keep) {
    if (count <= keep) return 0;
    const size_t excess = count - keep;
    return lowWater < excess ? lowWater : excess;
}

// Monitor only (one caller at a time): ends a trim period when kPoolTrimPeriodNs have passed since
// the last one began, and strips up to kPoolTrimChunk contexts that the last period found unused.
// True while stripping remains to be done (the caller comes back soon).
bool trimContextPool(uint64_t nowNs);

// --- The reserve: equipped contexts made ahead of demand, off the creating thread. A program that
// keeps more threads alive than the pool holds pays, at every create beyond it, a stack mapping,
// a guard, a TCB and first page faults (~10 us here). Once such a create finds no equipped context
// (a "dry" create, counted only after kReserveAfterContexts contexts exist, so that programs with
// few threads never see a reserve), the shared pool keeps a reserve target: idle carriers, with
// nothing to run or steal, equip one context at a time (refillContextPool) until the pool holds
// that many. Each dry create doubles the target (kReserveMin..kReserveMax); a trim period without
// one halves it, to zero below kReserveMin, and trims keep max(target, pool size) equipped.
// Memory: at most kReserveMax equipped contexts beyond what the program itself left pooled (a
// stack's top page, a TCB and static TLS each resident, about 8 KiB, and the stack's address
// space).
constexpr size_t kReserveAfterContexts = 64;
constexpr size_t kReserveMin = 16;
constexpr size_t kReserveMax = 256;

// Pure: the reserve target after a dry create when `contextsMade` contexts exist (a program that
// never had more than kReserveAfterContexts threads at once gets no reserve).
inline size_t reserveAfterDryCreate(size_t target, size_t contextsMade) {
    if (contextsMade < kReserveAfterContexts) return target;
    const size_t doubled = target * 2;
    if (doubled < kReserveMin) return kReserveMin;
    return doubled > kReserveMax ? kReserveMax : doubled;
}
// Pure: the reserve target at the end of a trim period; `dry` when a create found the pool dry
// during it.
inline size_t reserveAtPeriodEnd(size_t target, bool dry) {
    if (dry) return target;
    return target / 2 < kReserveMin ? 0 : target / 2;
}

// Idle carriers only (nothing runnable on their core or to steal): equips one context for the
// reserve if the pool is below its target. True when it made one and more are wanted (the caller
// looks for work, then may come back); false when nothing is wanted or making one failed (no
// retry until the next dry create). Cheap when nothing is wanted (one relaxed load).
bool refillContextPool();
// Whether refillContextPool() has work (one relaxed load): a carrier waiting for work on a parked
// thread's stack (waitInPlace) leaves that to its dispatcher.
bool contextPoolWantsRefill();
// Fork child, pool lock held: the parent's demand says nothing of the child's.
void resetReserveLocked();

// Pooled contexts, for tests and statistics: those in the shared pool with a stack and TCB, and
// those without (stripped). Takes the pool lock.
struct PoolCounts {
    size_t equipped = 0;
    size_t bare = 0;
    size_t reserveTarget = 0;
    uint64_t refilled = 0;  // contexts equipped by refillContextPool() since the process started
};
PoolCounts sharedPoolCounts();

// --- Iteration and fork support (fork.cc, glibc_tcb.cc). While the pool lock is held no context
// is made and no pooled TCB is freed (strip() clears `tcb` under it), so a TCB read under the lock
// stays valid until unlock.
void lockContextPool();
void unlockContextPool();
// Calls fn(t, arg) for every context ever made (live, exited, cached or pooled). Caller holds the
// pool lock; fn must not take it.
void forEachContextLocked(void (*fn)(ThreadContext*, void*), void* arg);

}  // namespace arbrt::detail
