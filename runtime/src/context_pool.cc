#include <atomic>
#include <memory>
#include <mutex>

#include "glibc_tcb.h"
#include "runtime_state.h"

namespace arbrt::detail {
namespace {

// Contexts not cached by a core. Guarded by `lock`; survives stop()/start() so pooled stacks are
// reused.
struct SharedPool {
    SpinLock lock;
    ThreadContext* head = nullptr;
    size_t count = 0;
} gShared;

// Slabs of contexts, never freed (stale handles may read a context at any time). Guarded by
// gShared.lock.
struct Slab {
    std::unique_ptr<ThreadContext[]> contexts;
    size_t used;
    Slab* next;
};
Slab* gSlabs = nullptr;
constexpr size_t kSlabSize = 256;

// Every slab's contexts by slab number, for contextAtSlot(): written (once per entry, release)
// under gShared.lock, read lock-free (acquire). 16 Mi contexts at most; BSS, committed as used.
constexpr size_t kMaxSlabs = 65536;
std::atomic<ThreadContext*> gSlabTable[kMaxSlabs];
size_t gSlabCount = 0;  // guarded by gShared.lock

ThreadContext* newContextLocked() {
    if (!gSlabs || gSlabs->used == kSlabSize) {
        if (gSlabCount == kMaxSlabs) return nullptr;
        auto* slab = new (std::nothrow)
            Slab{std::unique_ptr<ThreadContext[]>(new (std::nothrow) ThreadContext[kSlabSize]), 0,
                 gSlabs};
        if (!slab || !slab->contexts) {
            delete slab;
            return nullptr;
        }
        for (size_t i = 0; i < kSlabSize; ++i) {
            slab->contexts[i].slot = uint32_t(gSlabCount * kSlabSize + i);
        }
        gSlabTable[gSlabCount++].store(slab->contexts.get(), std::memory_order_release);
        gSlabs = slab;
    }
    return &gSlabs->contexts[gSlabs->used++];
}

ThreadContext* popShared() {
    std::lock_guard<SpinLock> guard(gShared.lock);
    if (ThreadContext* t = gShared.head) {
        gShared.head = t->nextFree;
        --gShared.count;
        return t;
    }
    return newContextLocked();
}

size_t sharedLimit() {
    return gRuntime ? gRuntime->options.pooledContextsPerCore * size_t(gRuntime->numCores) : 0;
}

// Releases the stack and TCB of a context that will sit in the pool bare.
void strip(ThreadContext* t) {
    unmapStack(&t->stack);
    // Detached from the context under the pool lock, freed after: forEachContextLocked() callers
    // (dlopen's TLS propagation) never write into a freed TCB.
    gShared.lock.lock();
    void* tcb = t->tcb;
    t->tcb = nullptr;
    gShared.lock.unlock();
    if (tcb) GlibcTcb::deallocate(tcb);
}

void pushShared(ThreadContext* t) {
    gShared.lock.lock();
    const bool keep = gShared.count < sharedLimit();
    gShared.lock.unlock();
    if (!keep) strip(t);
    std::lock_guard<SpinLock> guard(gShared.lock);
    t->nextFree = gShared.head;
    gShared.head = t;
    ++gShared.count;
}

// Gives `t` the requested stack: the caller's, or a mapping of ours (the pooled one when its sizes
// match). A caller's stack left from the previous thread is only forgotten.
bool equipStack(ThreadContext* t, const StackRequest& request) {
    if (request.userLow) {
        unmapStack(&t->stack);
        t->stack = userStack(request.userLow, request.usable);
        return true;
    }
    const size_t usable = roundUpToPage(request.usable);
    const size_t guard = roundUpToPage(request.guard);
    if (t->stack.low &&
        (!t->stack.owned || t->stack.usable() != usable || t->stack.guard != guard)) {
        unmapStack(&t->stack);
    }
    return t->stack.low || mapStack(usable, guard, &t->stack);
}

// Gives `t` the requested stack and a TCB ready for a new thread.
bool equip(ThreadContext* t, const StackRequest& stack) {
    if (!equipStack(t, stack)) return false;
    if (t->tcb) {
        GlibcTcb::resetForReuse(t->tcb);
        t->reusedTcb = true;
    } else {
        t->tcb = GlibcTcb::allocate();
        if (!t->tcb) return false;
        t->reusedTcb = false;
    }
    GlibcTcb::prepare(t->tcb, t, t->stack.low, t->stack.size, t->stack.guard);
    return true;
}

}  // namespace

ThreadContext* acquireContext(const StackRequest& stack) {
    ThreadContext* t = nullptr;
    Carrier* c = currentCarrier();
    if (c && c->core->cache.head) {
        ContextCache& cache = c->core->cache;
        t = cache.head;
        cache.head = t->nextFree;
        --cache.count;
    } else {
        t = popShared();
    }
    if (!t) return nullptr;
    t->nextFree = nullptr;
    storeParkRhythm(&t->parkRhythm, {});  // the previous occupant's rhythm says nothing of this one
    if (!equip(t, stack)) {
        pushShared(t);
        return nullptr;
    }
    return t;
}

void releaseContext(ThreadContext* t) {
    // lifecycle already carries the next generation; runState must too, so late signals miss.
    t->runState.store(packState(t->generation(), kRunnable), std::memory_order_release);
    Carrier* c = currentCarrier();
    if (c && gRuntime && c->core->cache.count < gRuntime->options.pooledContextsPerCore) {
        t->nextFree = c->core->cache.head;
        c->core->cache.head = t;
        ++c->core->cache.count;
        return;
    }
    pushShared(t);
}

ThreadContext* contextAtSlot(uint32_t slot) {
    const size_t slab = slot / kSlabSize;
    if (slab >= kMaxSlabs) return nullptr;
    ThreadContext* contexts = gSlabTable[slab].load(std::memory_order_acquire);
    return contexts ? &contexts[slot % kSlabSize] : nullptr;
}

void flushCache(ContextCache* cache) {
    while (ThreadContext* t = cache->head) {
        cache->head = t->nextFree;
        pushShared(t);
    }
    cache->count = 0;
}

void lockContextPool() {
    gShared.lock.lock();
}

void unlockContextPool() {
    gShared.lock.unlock();
}

void forEachContextLocked(void (*fn)(ThreadContext*, void*), void* arg) {
    for (Slab* slab = gSlabs; slab; slab = slab->next) {
        for (size_t i = 0; i < slab->used; ++i) fn(&slab->contexts[i], arg);
    }
}

}  // namespace arbrt::detail
