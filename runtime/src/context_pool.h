// Pools of thread contexts. A context keeps its stack and TCB while pooled, so creating a thread on
// a warm pool costs no mmap and no TLS allocation. Contexts themselves are never freed (stale
// handles may still read them); past the pool limits their stacks and TCBs are released instead.
#pragma once

#include <cstddef>
#include <cstdint>

#include "arbrt/sync.h"
#include "context.h"

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

// --- Iteration and fork support (fork.cc, glibc_tcb.cc). While the pool lock is held no context
// is made and no pooled TCB is freed (strip() clears `tcb` under it), so a TCB read under the lock
// stays valid until unlock.
void lockContextPool();
void unlockContextPool();
// Calls fn(t, arg) for every context ever made (live, exited, cached or pooled). Caller holds the
// pool lock; fn must not take it.
void forEachContextLocked(void (*fn)(ThreadContext*, void*), void* arg);

}  // namespace arbrt::detail
