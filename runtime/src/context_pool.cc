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

ThreadContext* newContextLocked() {
    if (!gSlabs || gSlabs->used == kSlabSize) {
        auto* slab = new (std::nothrow)
            Slab{std::unique_ptr<ThreadContext[]>(new (std::nothrow) ThreadContext[kSlabSize]), 0,
                 gSlabs};
        if (!slab || !slab->contexts) {
            delete slab;
            return nullptr;
        }
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

// Gives `t` a stack of the requested size and a TCB ready for a new thread.
bool equip(ThreadContext* t, size_t usableStack) {
    const size_t page = pageSize();
    const size_t rounded = (usableStack + page - 1) / page * page;
    if (t->stack.low && t->stack.usable() != rounded) unmapStack(&t->stack);
    if (!t->stack.low && !mapStack(rounded, &t->stack)) return false;
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

ThreadContext* acquireContext(size_t usableStack) {
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
    if (!equip(t, usableStack)) {
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
