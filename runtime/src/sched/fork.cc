// fork() support and live-thread iteration (arbrt/embed/fork.h).
//
// The child keeps nothing of the parent's runtime state but the context pool (consistent: its lock
// is held across fork) and the forking thread's own context. The parent's RuntimeState (cores,
// queues, timers, carriers) is leaked rather than destroyed: locks in it may be held by carriers
// that do not exist in the child, and nothing may run on the stacks it references.
#include "arbrt/embed/fork.h"

#include <cstdlib>

#include "arbrt/embed/host.h"
#include "platform/arch.h"
#include "sched/runtime_state.h"
#include "tls/glibc_tcb.h"

extern "C" {
extern const unsigned int __rseq_size;
extern const ptrdiff_t __rseq_offset;
}

namespace arbrt {
namespace detail {
namespace {

using boost::context::detail::jump_fcontext;
using boost::context::detail::make_fcontext;

// The forking kernel thread's stack once its user thread moved off it: it runs core 0's
// dispatcher, as a carrier made by pthread_create would, with as much stack (committed lazily).
constexpr size_t kHostStackSize = 8 << 20;
constexpr long kRseqSignature = 0x53053053;  // glibc's RSEQ_SIG on x86-64
constexpr long kRseqUnregister = 1;

bool isLive(uint64_t lifecycle) {
    switch (lifecycle & kJoinMask) {
        case kJoinable:
        case kJoining:
        case kDetached:
        case kExiting:
            return true;
        default:
            return false;
    }
}

// Child, pool lock held: a context of any thread but the survivor becomes a stale handle (join,
// signal and detach through it see another generation). It is in no pool: leaked, never reused,
// since its stack may still be referenced by what the dead thread left behind.
void forgetOtherThread(ThreadContext* t, void* survivor) {
    if (t == survivor) return;
    const uint64_t s = t->lifecycle.load(std::memory_order_relaxed);
    if ((s & kJoinMask) == kFree) return;
    const uint32_t next = generationOf(s) + 1;
    t->runState.store(packState(next, kRunnable), std::memory_order_relaxed);
    t->lifecycle.store(packState(next, kFree), std::memory_order_relaxed);
}

// Child: the survivor's links into the parent's structures (a joiner, timers, queues, cores) point
// at things that no longer exist.
void resetSurvivor(ThreadContext* self, int numCores) {
    const uint64_t s = self->lifecycle.load(std::memory_order_relaxed);
    if ((s & kJoinMask) == kJoining || (s & kJoinMask) == kJoinable) {
        // Its joiner (registered, or just claiming the slot) was another thread of the parent:
        // joinable again.
        self->joiner.store(nullptr, std::memory_order_relaxed);
        self->lifecycle.store(packState(generationOf(s), kJoinable), std::memory_order_relaxed);
    }
    self->heapIndex = -1;
    self->timerCore = nullptr;
    self->nextRunnable = nullptr;
    self->switching.store(false, std::memory_order_relaxed);
    self->reservedCore = nullptr;  // a core of the parent's: the child's policy reserves again
    CoreSet all;
    for (int i = 0; i < numCores; ++i) all.set(size_t(i));
    if ((self->allowed & all).none()) self->allowed = all;
}

// The kernel thread that forked: the rseq area the kernel updates for it lies in its original
// TCB, which glibc's fork child handling returned to glibc's stack cache (a new carrier may get
// it). Unregistering keeps the kernel from writing there.
void unregisterRseq(void* nativeTcb) {
    if (__rseq_size == 0 || !nativeTcb) return;
    rawSyscall(SYS_rseq, reinterpret_cast<long>(static_cast<char*>(nativeTcb) + __rseq_offset),
               long(__rseq_size), kRseqUnregister, kRseqSignature);
}

// Runs on the forking kernel thread, on a stack and TCB of its own, once the surviving user thread
// has switched away: makes it runnable on the new runtime, then runs core 0's dispatcher itself
// (the child starts no carrier thread: a thread creation and a cross-thread wake-up less per
// fork, and the survivor resumes on the kernel thread it forked on). The process exits when its
// last user thread does (finishExit); the dispatcher returns only if the runtime stops.
[[noreturn]] void hostMain(transfer_t t) noexcept {
    GlibcTcb::resetLibcState(false);  // ctype tables of the fresh TCB
    auto* self = static_cast<ThreadContext*>(t.data);
    self->savedContext = t.fctx;
    gRuntime->policy.adoptSurvivor(self);
    self->core = placeThread(self, -1);
    enqueue(self, Wake::wakeup);
    runAsCarrier(&gRuntime->carriers[0]);
    waitUntilNoThreads();
    std::exit(0);  // the last thread exited (glibc does the same)
}

// Moves the calling user thread from the forking kernel thread to the new runtime's carriers.
// Returns on a new carrier; false (still on the forking kernel thread) if no stack or TCB could be
// made for the kernel thread.
bool handOver(ThreadContext* self) {
    Stack stack;
    if (!mapStack(kHostStackSize, pageSize(), &stack)) return false;
    void* tcb = GlibcTcb::allocate(nullptr);
    if (!tcb) {
        unmapStack(&stack);
        return false;
    }
    GlibcTcb::prepare(tcb, nullptr, stack.low, stack.size, stack.guard);
    // glibc now lists self->tcb as this kernel thread: the kernel thread keeps that place, under
    // its new TCB. Nothing else changes the list now: the new runtime's threads create threads
    // (spare carriers) only for a user thread blocked in the kernel, and ours is the only one.
    GlibcTcb::moveThreadListEntry(self->tcb, tcb, int32_t(rawSyscall(SYS_gettid)));
    fcontext_t host = make_fcontext(stack.top(), stack.usable(), hostMain);
    setThreadPointer(tcb);
    transfer_t back = jump_fcontext(host, self);
    completeSwitch(back);  // resumed by a carrier's dispatcher: it records its context
    return true;
}

}  // namespace
}  // namespace detail

using namespace detail;

void prepareFork() {
    GlibcTcb::lockStaticTls();
    lockContextPool();
}

void parentAfterFork() {
    unlockContextPool();
    GlibcTcb::unlockStaticTls();
}

std::optional<Error> childAfterFork(int numCores) {
    RuntimeState* old = gRuntime;
    ThreadContext* self = currentContext();
    if (old) forEachContextLocked(forgetOtherThread, self);
    resetReserveLocked();
    unlockContextPool();
    GlibcTcb::unlockStaticTls();
    if (!old) return std::nullopt;
    resetParkingLotAfterFork();
    void* forkingTcb = self && self->carrier ? self->carrier->nativeTcb : nullptr;
    RuntimeOptions options = old->options;
    options.coreProvider = nullptr;        // never the parent's arbiter connection
    options.tracePath.clear();             // the parent's timeline stays the parent's
    options.coreZeroAwaitsCaller = false;  // no main() to come: the forking thread or a carrier
    options.numCores = numCores > 0 && numCores <= kMaxCores ? numCores : old->numCores;
    gRuntime = nullptr;  // leaked, see the top of this file
    if (self) resetSurvivor(self, options.numCores);
    // A forking user thread's kernel thread becomes core 0's carrier (hostMain).
    if (auto err = startRuntime(options, /*callerBecomesCarrierZero=*/self != nullptr)) {
        if (self) writeTcbSlot(self->tcb, kUserThreadSlot, nullptr);  // a plain kernel thread now
        return err;
    }
    if (!self) return std::nullopt;  // a kernel thread forked: it stays one
    gRuntime->liveThreads.store(1, std::memory_order_relaxed);
    gRuntime->peakLiveThreads.store(1, std::memory_order_relaxed);
    unregisterRseq(forkingTcb);
    if (!handOver(self)) {
        // Cannot move: keep running where we are as a kernel thread that creates user threads,
        // on a core 0 carrier of the usual kind after all.
        writeTcbSlot(self->tcb, kUserThreadSlot, nullptr);
        gRuntime->liveThreads.store(0, std::memory_order_relaxed);
        gRuntime->coreZeroCarrier.store(kCoreZeroStarted, std::memory_order_relaxed);
        startCarrier(*gRuntime, 0);
        return Error{Errc::systemError, "cannot make a stack for the forking kernel thread"};
    }
    return std::nullopt;
}

void forEachLiveThread(void (*fn)(ThreadId, void*, void*), void* arg) {
    struct Visit {
        void (*fn)(ThreadId, void*, void*);
        void* arg;
    } visit{fn, arg};
    lockContextPool();
    forEachContextLocked(
        [](ThreadContext* t, void* raw) {
            const auto* v = static_cast<Visit*>(raw);
            const uint64_t s = t->lifecycle.load(std::memory_order_acquire);
            if (isLive(s) && t->tcb) v->fn(ThreadId{t, generationOf(s)}, t->tcb, v->arg);
        },
        &visit);
    unlockContextPool();
}

}  // namespace arbrt
