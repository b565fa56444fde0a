#include <sys/mman.h>
#include <sys/syscall.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>

#include "arbrt/embed/invariant.h"
#include "platform/sys.h"
#include "sched/runtime_state.h"
#include "tls/glibc_tcb.h"

namespace arbrt::detail {
namespace {

// Contexts not cached by a core, in two LIFO lists: `equipped` ones keep a stack and TCB, `bare`
// ones were stripped by a trim (or could not be equipped). Guarded by `lock`; survives
// stop()/start() so pooled stacks are reused. `lowWater` is the fewest equipped contexts the pool
// held since the current trim period began; `toTrim` how many the last period's end found unused
// (the monitor strips them in chunks). `reserveTarget` is how many equipped contexts idle carriers
// keep ready (context_pool.h: the reserve), `dry` whether a create found none since the current
// trim period began.
struct SharedPool {
    SpinLock lock{LockRank::contextPool};
    ThreadContext* equipped = nullptr;
    size_t equippedCount = 0;
    size_t lowWater = 0;
    size_t toTrim = 0;
    ThreadContext* bare = nullptr;
    size_t bareCount = 0;
    size_t reserveTarget = 0;
    bool dry = false;
} gShared;

// Whether the pool holds fewer equipped contexts than its reserve target: a hint that idle
// carriers read on every idle pass without the pool lock (relaxed: a stale value costs one lock
// round in refillContextPool(), or one pass of delay). Set under gShared.lock when a pop leaves the
// pool short, cleared under it when a refill reaches the target or fails.
std::atomic<bool> gRefillWanted{false};
// Contexts refillContextPool() equipped, for statistics and tests: relaxed increments by refillers.
std::atomic<uint64_t> gRefilled{0};

// Written only by the monitor (trimContextPool): when the current trim period began.
uint64_t gTrimPeriodStartNs = 0;

// Slabs of contexts, never freed (stale handles may read a context at any time); contexts[0, used)
// are constructed. Guarded by
// gShared.lock.
struct Slab {
    ThreadContext* contexts;
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
// Contexts constructed so far (slots below it exist): written under gShared.lock after the
// context and its slab's table entry (release), read by contextAtSlot() first (acquire).
std::atomic<uint32_t> gSlotsMade{0};

// A slab's memory: mapped, not touched. Its contexts are constructed one at a time as they are
// first handed out, so a process with one thread touches one page of it: constructing all 256
// (128 KiB) up front cost 32 page allocations, about 90 us of every program's start-up on a VM
// whether faulted in or populated. Never unmapped (see Slab).
ThreadContext* mapSlab() {
    const long mapped = sysCall(SYS_mmap, 0, long(sizeof(ThreadContext) * kSlabSize),
                                PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return sysFailed(mapped) ? nullptr : reinterpret_cast<ThreadContext*>(mapped);
}

ThreadContext* newContextLocked() {
    if (!gSlabs || gSlabs->used == kSlabSize) {
        if (gSlabCount == kMaxSlabs) return nullptr;
        ThreadContext* contexts = mapSlab();
        if (!contexts) return nullptr;
        auto* slab = new (std::nothrow) Slab{contexts, 0, gSlabs};
        if (!slab) {
            sysCall(SYS_munmap, reinterpret_cast<long>(contexts),
                    long(sizeof(ThreadContext) * kSlabSize));
            return nullptr;
        }
        gSlabTable[gSlabCount++].store(slab->contexts, std::memory_order_release);
        gSlabs = slab;
    }
    const uint32_t slot = uint32_t((gSlabCount - 1) * kSlabSize + gSlabs->used);
    ThreadContext* t = new (&gSlabs->contexts[gSlabs->used++]) ThreadContext;
    t->slot = slot;
    gSlotsMade.store(slot + 1, std::memory_order_release);
    return t;
}

// Caller holds gShared.lock. Takes the most recently pooled equipped context, keeping lowWater.
ThreadContext* popEquippedLocked() {
    ThreadContext* t = gShared.equipped;
    if (!t) return nullptr;
    gShared.equipped = t->nextFree;
    if (--gShared.equippedCount < gShared.lowWater) gShared.lowWater = gShared.equippedCount;
    return t;
}

// Caller holds gShared.lock. Asks idle carriers for a refill when the pool fell below its reserve
// target; the load first keeps a pool in steady use from writing the hint's line on every pop.
void noteShortLocked() {
    if (gShared.equippedCount < gShared.reserveTarget &&
        !gRefillWanted.load(std::memory_order_relaxed)) {
        gRefillWanted.store(true, std::memory_order_relaxed);
    }
}

// Caller holds gShared.lock. A create found no equipped context: beyond kReserveAfterContexts
// contexts that is a program keeping many threads alive, and the reserve grows (context_pool.h).
void noteDryLocked() {
    const size_t made = gSlotsMade.load(std::memory_order_relaxed);
    gShared.reserveTarget = reserveAfterDryCreate(gShared.reserveTarget, made);
    if (gShared.reserveTarget == 0) return;
    gShared.dry = true;
    noteShortLocked();
}

// Caller holds gShared.lock. A bare context if any (its stack and TCB are still to be made), else a
// new one; null when no slot is left.
ThreadContext* popBareOrNewLocked() {
    if (ThreadContext* t = gShared.bare) {
        gShared.bare = t->nextFree;
        --gShared.bareCount;
        return t;
    }
    return newContextLocked();
}

// An equipped context if any (no system call to make it usable), else a bare one, else a new one.
ThreadContext* popShared() {
    std::lock_guard<SpinLock> guard(gShared.lock);
    if (ThreadContext* t = popEquippedLocked()) {
        noteShortLocked();
        return t;
    }
    noteDryLocked();
    return popBareOrNewLocked();
}

size_t sharedLimit() {
    return gRuntime ? gRuntime->options.pooledContextsPerCore * size_t(gRuntime->numCores) : 0;
}

// Caller holds gShared.lock. Equipped contexts a trim leaves: the configured pool or the reserve.
size_t keepLocked() {
    return std::max(sharedLimit(), gShared.reserveTarget);
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
    t->freshTcb = false;
    if (tcb) GlibcTcb::deallocate(tcb);
}

// Pools `t` as it is: in the equipped list when it has a TCB (its stack may be a caller's that
// the next occupant replaces), else in the bare list. No system call: the exit path stays cheap.
void pushShared(ThreadContext* t) {
    std::lock_guard<SpinLock> guard(gShared.lock);
    if (t->tcb) {
        t->nextFree = gShared.equipped;
        gShared.equipped = t;
        ++gShared.equippedCount;
    } else {
        t->nextFree = gShared.bare;
        gShared.bare = t;
        ++gShared.bareCount;
    }
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
    if (t->stack.low) return true;
    // Default stacks come from the current core's batch (one mmap for many; stack.h). Read here,
    // with no lock or switch until the carve is done, as the cache is in acquireContext().
    Carrier* c = currentCarrier();
    if (c && gRuntime && usable == roundUpToPage(gRuntime->options.defaultStackSize) &&
        guard == pageSize()) {
        return carveStack(&c->core->stackBatch, usable, guard, &t->stack);
    }
    return mapStack(usable, guard, &t->stack);
}

// The TCB batch of the core the caller runs on (read, as the cache is in acquireContext(), with no
// switch until GlibcTcb::allocate() has carved its block); null off the carriers.
TcbBatch* ownBatch() {
    Carrier* c = currentCarrier();
    return c ? &c->core->tcbBatch : nullptr;
}

// Gives `t` the requested stack and a TCB ready for a new thread.
bool equip(ThreadContext* t, const StackRequest& stack) {
    if (!equipStack(t, stack)) return false;
    if (t->tcb && t->freshTcb) {
        t->freshTcb = false;  // made by a refill: its TLS is the images already
        t->reusedTcb = false;
    } else if (t->tcb) {
        GlibcTcb::resetForReuse(t->tcb);
        t->reusedTcb = true;
    } else {
        t->tcb = GlibcTcb::allocate(ownBatch());
        if (!t->tcb) return false;
        t->reusedTcb = false;
    }
    // A TCB made ready for this context and stack by an earlier occupant or by a refill needs no
    // stores: for a thread created here and run on another core they were a sixth of the create.
    if (!GlibcTcb::preparedFor(t->tcb, t, t->stack.low, t->stack.size, t->stack.guard)) {
        GlibcTcb::prepare(t->tcb, t, t->stack.low, t->stack.size, t->stack.guard);
    }
    return true;
}

// The stack a thread gets without attributes: what the reserve is made of.
StackRequest defaultStack() {
    StackRequest request;
    request.usable = gRuntime ? gRuntime->options.defaultStackSize : 0;
    request.guard = pageSize();
    return request;
}

// Takes a context for the reserve while the pool is below its target: a bare one, else a new one.
// Clears the hint when nothing is wanted.
ThreadContext* takeForRefill() {
    std::lock_guard<SpinLock> guard(gShared.lock);
    if (gShared.equippedCount >= gShared.reserveTarget) {
        gRefillWanted.store(false, std::memory_order_relaxed);
        return nullptr;
    }
    ThreadContext* t = popBareOrNewLocked();
    if (!t) gRefillWanted.store(false, std::memory_order_relaxed);
    return t;
}

}  // namespace

bool contextPoolWantsRefill() {
    return gRefillWanted.load(std::memory_order_relaxed);
}

bool refillContextPool() {
    if (!gRefillWanted.load(std::memory_order_relaxed) || !gRuntime) return false;
    ThreadContext* t = takeForRefill();
    if (!t) return false;
    // A default stack with its top page faulted in (the creator writes the entry frame there) and
    // a TCB whose TLS glibc just initialised, prepared for this stack: the create that takes it
    // only fills the context's fields.
    bool made = equipStack(t, defaultStack());
    if (made && !t->tcb) {
        t->tcb = GlibcTcb::allocate(ownBatch());
        t->freshTcb = t->tcb != nullptr;
        made = t->freshTcb;
    }
    if (made) {
        GlibcTcb::prepare(t->tcb, t, t->stack.low, t->stack.size, t->stack.guard);
        static_cast<volatile char*>(t->stack.top())[-1] = 0;
    }
    pushShared(t);
    if (!made) {
        // Out of memory or address space: no retry until a create finds the pool dry again.
        gRefillWanted.store(false, std::memory_order_relaxed);
        return false;
    }
    gRefilled.fetch_add(1, std::memory_order_relaxed);
    return true;
}

void resetReserveLocked() {
    gShared.reserveTarget = 0;
    gShared.dry = false;
    gRefillWanted.store(false, std::memory_order_relaxed);
}

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
    t->resumePoint = nullptr;             // nor its resume point (cohort dispatch)
    t->resumeTag.store(0, std::memory_order_relaxed);
    if (!equip(t, stack)) {
        pushShared(t);
        return nullptr;
    }
    return t;
}

void releaseContext(ThreadContext* t) {
    ARB_ASSERT((t->lifecycle.load(std::memory_order_relaxed) & kJoinMask) == kFree,
               "a context returns to the pool only after its lifecycle reached kFree");
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
    if (slot >= gSlotsMade.load(std::memory_order_acquire)) return nullptr;  // not made yet
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

bool trimContextPool(uint64_t nowNs) {
    if (nowNs - gTrimPeriodStartNs >= kPoolTrimPeriodNs) {
        std::lock_guard<SpinLock> guard(gShared.lock);
        gShared.reserveTarget = reserveAtPeriodEnd(gShared.reserveTarget, gShared.dry);
        gShared.dry = false;
        gShared.toTrim = contextsToTrim(gShared.lowWater, gShared.equippedCount, keepLocked());
        gShared.lowWater = gShared.equippedCount;
        gTrimPeriodStartNs = nowNs;
    }
    for (size_t i = 0; i < kPoolTrimChunk; ++i) {
        ThreadContext* t = nullptr;
        {
            std::lock_guard<SpinLock> guard(gShared.lock);
            // Re-checked each time: creates may have taken contexts since the period ended.
            if (gShared.toTrim == 0 || gShared.equippedCount <= keepLocked()) {
                gShared.toTrim = 0;
                return false;
            }
            --gShared.toTrim;
            t = popEquippedLocked();
        }
        strip(t);
        pushShared(t);
    }
    std::lock_guard<SpinLock> guard(gShared.lock);
    return gShared.toTrim != 0;
}

PoolCounts sharedPoolCounts() {
    std::lock_guard<SpinLock> guard(gShared.lock);
    return PoolCounts{gShared.equippedCount, gShared.bareCount, gShared.reserveTarget,
                      gRefilled.load(std::memory_order_relaxed)};
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
