// User-thread lifecycle: create, exit, join, detach, and the calls a thread makes on itself.
#include <sys/syscall.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "arbrt/embed/invariant.h"
#include "arbrt/embed/raw_syscall.h"
#include "arbrt/embed/threads.h"
#include "arbrt/parking_lot.h"
#include "arbrt/thread.h"
#include "arbrt/time.h"
#include "platform/arch.h"
#include "sched/preempt.h"
#include "sched/runtime_state.h"
#include "tls/glibc_tcb.h"

namespace arbrt {
namespace detail {
namespace {

using boost::context::detail::make_fcontext;

constexpr size_t kMinStack = 16 * 1024;  // PTHREAD_STACK_MIN

// The embedding layer's extension-storage reset (setExtensionReset): set before threads exist,
// read by every allocateThread.
std::atomic<void (*)(void*)> gExtensionReset{nullptr};

// Whether `t` may run on `core` as far as its reservation goes (an exclusive thread stays on its
// core); reservedCore lies on the line of `allowed`, which the caller has just read.
bool reservedCoreAllows(const ThreadContext* t, const Core* core) {
    const Core* home = std::atomic_ref(t->reservedCore).load(std::memory_order_relaxed);
    return home == nullptr || home == core;
}

[[noreturn]] void exitCurrent(ThreadContext* self, void* result) {
    GlibcTcb::runTlsDestructors();  // thread_local destructors, on the thread's own TLS
    // An exclusive thread's core is shared again from here on (its joiner may run there next).
    if (self->placedClass != kPlacedNormal) [[unlikely]]
        gRuntime->policy.threadExiting(self);
    self->result = result;
    // A waiting joiner is woken now, so it can be the next thread this core runs instead of a trip
    // through the dispatcher; kExiting keeps it from freeing us until we are off our stack.
    uint64_t s = self->lifecycle.load(std::memory_order_acquire);
    if ((s & kJoinMask) == kJoining) {
        Waiter* joiner = self->joiner.load(std::memory_order_relaxed);  // claimed before kJoining
        ARB_ASSERT(joiner != nullptr, "kJoining is set only after the joiner slot is claimed");
        if (self->lifecycle.compare_exchange_strong(s, packState(generationOf(s), kExiting),
                                                    std::memory_order_acq_rel)) {
            const WakeToken token = claimWake(joiner);
            // A parked joiner allowed here runs next, directly: no run-queue round trip (not a
            // batch joiner: normal threads may be waiting here; not while real-time threads
            // wait, which go first).
            Core* here = self->carrier->core;
            if (token.thread && token.thread->allowed.test(here->id) &&
                token.thread->queueClass == kNormalQueue &&
                !here->rtHead.load(std::memory_order_relaxed) &&
                acceptsThread(here, token.thread) && reservedCoreAllows(token.thread, here) &&
                !here->releaseRequested.load(std::memory_order_relaxed) &&
                claimParked(token.thread, token.generation)) {
                token.thread->core = here;
                switchTo(self, token.thread, AfterSwitch::exit);
            }
            deliverWake(token);
        }
    }
    switchAway(self, AfterSwitch::exit);
    __builtin_unreachable();
}

// First code a new thread runs. noexcept: an exception escaping the thread function terminates the
// process, as with std::thread.
[[noreturn]] void threadEntry(transfer_t t) noexcept {
    completeSwitch(t);
    ThreadContext* self = currentContext();
    GlibcTcb::resetLibcState(self->reusedTcb);
    exitCurrent(self, self->entry(self->entryArg));
}

CoreSet allCores() {
    CoreSet all;
    for (int i = 0; i < gRuntime->numCores; ++i) all.set(i);
    return all;
}

void countNewThread() {
    RuntimeState& rt = *gRuntime;
    if (Carrier* c = currentCarrier()) {
        // Owner-only counter: no locked instruction on the create path.
        c->core->threadsCreated.store(c->core->threadsCreated.load(std::memory_order_relaxed) + 1,
                                      std::memory_order_relaxed);
    } else {
        rt.threadsCreated.fetch_add(1, std::memory_order_relaxed);
    }
    const uint64_t live = rt.liveThreads.fetch_add(1, std::memory_order_relaxed) + 1;
    if (live >= 2) {  // a second thread: the monitor and the deferred carriers have work now
        if (!rt.deferredCarriersWanted.load(std::memory_order_relaxed)) [[unlikely]]
            wantDeferredCarriers();
        if (!rt.monitorWanted.load(std::memory_order_relaxed)) [[unlikely]]
            wantMonitor();
    }
    uint64_t peak = rt.peakLiveThreads.load(std::memory_order_relaxed);
    while (live > peak && !rt.peakLiveThreads.compare_exchange_weak(peak, live)) {
    }
    // While batch threads live, the arbiter request depends on the number of normal threads
    // (core_request.h). One load of a line no create writes.
    if (rt.policy.batchThreads() != 0) [[unlikely]]
        requestChanged();
}

// Claims an exited thread for its joiner (or detacher): exactly one caller wins the CAS. A joiner's
// claim leaves kFreedByJoin in the free state (see context.h).
bool claimExited(ThreadContext* t, uint64_t exitedState, void** result, bool byJoin) {
    uint64_t s = exitedState;
    const uint64_t freed = packState(generationOf(s) + 1, kFree | (byJoin ? kFreedByJoin : 0));
    if (!t->lifecycle.compare_exchange_strong(s, freed, std::memory_order_acq_rel)) return false;
    if (result) *result = t->result;
    releaseContext(t);
    return true;
}

// What a join or detach through a handle whose context is free says: only the preload reaches
// one with its current generation (through a pthread_t's TCB), and glibc answers ESRCH for a
// joined thread and EINVAL for a detached one that exited.
int freedError(uint64_t s) {
    return (s & kFreedByJoin) ? ESRCH : EINVAL;
}

// Waits as the registered joiner; returns 0 or ETIMEDOUT (after deregistering, slot included; also
// when `interrupted`, if given, became true).
int awaitExit(ThreadContext* t, uint32_t gen, Waiter* w, uint64_t deadlineNs,
              bool (*interrupted)()) {
    const bool woken =
        interrupted ? parkUntilWokenOr(w, deadlineNs, interrupted) : parkUntilWoken(w, deadlineNs);
    if (woken) return 0;
    uint64_t joining = packState(gen, kJoining);
    if (t->lifecycle.compare_exchange_strong(joining, packState(gen, kJoinable),
                                             std::memory_order_acq_rel)) {
        // Only now: until the CAS the exiting thread may still read the slot to wake us.
        t->joiner.store(nullptr, std::memory_order_release);
        return ETIMEDOUT;
    }
    // It exited while we timed out: its wake-up is on the way and our Waiter must outlive it.
    parkUntilWoken(w, kNoDeadline);
    return 0;
}

// Whether the joiner slot holds another joiner than `mine` (then this caller is a second joiner).
bool joinedByOther(const ThreadContext* t, const Waiter* mine) {
    const Waiter* j = t->joiner.load(std::memory_order_acquire);
    return j != nullptr && j != mine;
}

// The joiner slot is claimed by its own CAS before the state becomes kJoining: two joiners racing
// (from any threads) cannot both register, nor can the loser leave its Waiter where the winner's
// should be. `w` lives across the loop, so a registered joiner recognises its own claim later.
int joinImpl(ThreadId id, uint64_t deadlineNs, bool blocking, void** result,
             bool (*interrupted)() = nullptr) {
    ThreadContext* t = id.context;
    if (!t) return ESRCH;
    if (t == currentContext() && t->generation() == id.generation) return EDEADLK;
    Waiter w;
    initWaiter(&w);
    uint64_t s = t->lifecycle.load(std::memory_order_acquire);
    for (;;) {
        if (generationOf(s) != id.generation) return ESRCH;
        switch (s & kJoinMask) {
            case kExited:
                if (joinedByOther(t, &w)) return EINVAL;  // woken, about to claim it
                if (claimExited(t, s, result, true)) return 0;
                s = t->lifecycle.load(std::memory_order_acquire);
                continue;
            case kJoinable: {
                if (!blocking) return EBUSY;
                Waiter* none = nullptr;
                if (!t->joiner.compare_exchange_strong(none, &w, std::memory_order_acq_rel)) {
                    return EINVAL;  // another joiner holds the slot
                }
                if (!t->lifecycle.compare_exchange_strong(s, packState(id.generation, kJoining),
                                                          std::memory_order_acq_rel)) {
                    t->joiner.store(nullptr, std::memory_order_release);  // s changed: look again
                    continue;
                }
                if (int err = awaitExit(t, id.generation, &w, deadlineNs, interrupted)) {
                    return interrupted && interrupted() ? EINTR : err;
                }
                s = t->lifecycle.load(std::memory_order_acquire);
                continue;
            }
            case kExiting:
                // Switching off its stack on another core (nanoseconds): wait if we are its joiner.
                if (joinedByOther(t, &w)) return EINVAL;
                yield();
                s = t->lifecycle.load(std::memory_order_acquire);
                continue;
            case kFree:
                return freedError(s);
            default:
                return EINVAL;  // detached, or another thread is joining it
        }
    }
}

}  // namespace

ThreadContext* allocateThread(const ThreadAttributes& attributes, int* err) {
    int dummy;
    int& e = err ? *err : dummy;
    if (!gRuntime) {
        e = EPERM;
        return nullptr;
    }
    // Before the embedder's main thread took core 0 (runtime_state.h: coreZeroCarrier).
    if (gRuntime->coreZeroCarrier.load(std::memory_order_acquire) == kCoreZeroAwaitingCaller)
        [[unlikely]] {
        if (!startAwaitedCoreZero(*gRuntime)) {
            e = EAGAIN;
            return nullptr;
        }
    }
    const CoreSet allowed =
        attributes.allowed.none() ? allCores() : attributes.allowed & allCores();
    if (attributes.core < -1 || attributes.core >= gRuntime->numCores || allowed.none() ||
        uint8_t(attributes.threadClass) > uint8_t(ThreadClass::batch) || attributes.priority < 0 ||
        attributes.priority > kMaxPriority) {
        e = EINVAL;
        return nullptr;
    }
    StackRequest stack;
    stack.usable = attributes.stackSize ? attributes.stackSize : gRuntime->options.defaultStackSize;
    stack.guard = attributes.guardSize == kDefaultGuard ? pageSize() : attributes.guardSize;
    stack.userLow = attributes.stackAddr;
    if (stack.usable < kMinStack) {
        if (stack.userLow) {
            e = EINVAL;  // the caller's memory cannot grow
            return nullptr;
        }
        stack.usable = kMinStack;
    }
    ThreadContext* t = acquireContext(stack);
    if (!t) {
        e = EAGAIN;
        return nullptr;
    }
    t->allowed = allowed;
    t->reservedCore = nullptr;
    t->queueClass = kNormalQueue;
    t->placedClass = kPlacedNormal;
    t->rtPriority.store(uint8_t(attributes.priority), std::memory_order_relaxed);
    t->wantedClass.store(uint8_t(ThreadClass::normal), std::memory_order_relaxed);
    t->replace.store(0, std::memory_order_relaxed);
    t->closureTop = t->stack.top();
    if (void (*reset)(void*) = gExtensionReset.load(std::memory_order_relaxed)) reset(t->extension);
    std::memset(t->extension, 0, sizeof t->extension);  // 4 cache lines, new or reused context
    e = 0;
    return t;
}

void* tcbOf(ThreadContext* t) {
    return t->tcb;
}

ThreadId threadFromTcb(const void* tcb) {
    if (!tcb) return {};
    auto* t =
        *reinterpret_cast<ThreadContext* const*>(static_cast<const char*>(tcb) + kUserThreadSlot);
    if (!t || t->tcb != tcb) return {};
    return ThreadId{t, t->generation()};
}

void* reserveClosureSpace(ThreadContext* t, size_t size, size_t align) {
    auto top = reinterpret_cast<uintptr_t>(t->closureTop);
    top = (top - size) & ~(uintptr_t(align) - 1);
    t->closureTop = reinterpret_cast<void*>(top);
    return t->closureTop;
}

// Where a new thread starts: the core its attributes name, else (Go's runnext) the creating user
// thread's own core when the creator runs one, so a create-then-join or create-then-wait hands the
// core over without crossing to another core; an idle core steals it if the creator keeps
// computing. A kernel thread's creations are spread by power of two choices (-1).
namespace {
int preferredCore(const ThreadAttributes& attributes) {
    if (attributes.core >= 0) return attributes.core;
    const ThreadContext* self = currentContext();
    if (!self || !self->carrier) return -1;
    const Core* core = self->carrier->core;
    return core && core->carrier.load(std::memory_order_relaxed) == self->carrier ? core->id : -1;
}
}  // namespace

ThreadId launchThread(ThreadContext* t, const ThreadAttributes& attributes,
                      void* (*trampoline)(void*), void* closure, bool* exclusiveFallback) {
    t->entry = trampoline;
    t->entryArg = closure;
    t->result = nullptr;
    t->joiner.store(nullptr, std::memory_order_relaxed);  // published by lifecycle's release
    t->cpuClock.store(0, std::memory_order_relaxed);      // not running yet: no CPU time
    auto sp = reinterpret_cast<uintptr_t>(t->closureTop) & ~uintptr_t(15);
    const size_t usable = sp - (reinterpret_cast<uintptr_t>(t->stack.low) + t->stack.guard);
    t->savedContext = make_fcontext(reinterpret_cast<void*>(sp), usable, &threadEntry);
    const uint32_t gen = t->generation();
    t->runState.store(packState(gen, kRunnable), std::memory_order_relaxed);
    t->lifecycle.store(packState(gen, attributes.detached ? kDetached : kJoinable),
                       std::memory_order_release);
    countNewThread();
    bool placed = true;
    if (attributes.threadClass != ThreadClass::normal) [[unlikely]] {
        const Carrier* creator = currentCarrier();
        placed = gRuntime->policy.placeNew(t, attributes.threadClass, attributes.core,
                                           creator ? creator->core : nullptr);
    }
    if (exclusiveFallback) *exclusiveFallback = !placed;
    t->core = t->reservedCore ? t->reservedCore : placeThread(t, preferredCore(attributes));
    enqueue(t, Wake::handoff);
    return ThreadId{t, gen};
}

void initWaiter(Waiter* w) {
    w->next = w->prev = nullptr;
    w->thread = currentContext();
    w->generation = w->thread ? w->thread->generation() : 0;
    w->state.store(Waiter::kWaiting, std::memory_order_relaxed);
}

WakeToken claimWake(Waiter* w) {
    // Read everything needed before the store: once the waiter sees kWoken its frame may be gone.
    WakeToken token{w->thread, w->generation, &w->state};
    w->state.store(Waiter::kWoken, std::memory_order_release);
    return token;
}

void deliverWake(const WakeToken& token) {
    if (token.thread) {
        signalContext(token.thread, token.generation);
    } else {
        futexWake(token.futexWord, 1);  // harmless if the waiter already returned: only a key
    }
}

void wake(Waiter* w) {
    deliverWake(claimWake(w));
}

// Blocks the calling thread until `deadlineNs` or a signal; no-op when the deadline has passed.
void blockUntilDeadline(ThreadContext* self, uint64_t deadlineNs) {
    if (nowNs() >= deadlineNs) return;
    addTimer(self->carrier->core, self, deadlineNs);
    parkCurrent(self);
    cancelTimer(self);
}

bool parkUntilWoken(Waiter* w, uint64_t deadlineNs) {
    if (ThreadContext* self = currentContext()) {
        while (w->state.load(std::memory_order_acquire) == Waiter::kWaiting) {
            if (deadlineNs == kNoDeadline) {
                parkCurrent(self);
            } else if (nowNs() >= deadlineNs) {
                return false;
            } else {
                blockUntilDeadline(self, deadlineNs);
            }
        }
        return true;
    }
    while (w->state.load(std::memory_order_acquire) == Waiter::kWaiting) {
        if (deadlineNs == kNoDeadline) {
            futexWait(&w->state, Waiter::kWaiting, nullptr);
            continue;
        }
        const uint64_t now = nowNs();
        if (now >= deadlineNs) return false;
        const uint64_t left = deadlineNs - now;
        timespec ts{time_t(left / 1'000'000'000), long(left % 1'000'000'000)};
        futexWait(&w->state, Waiter::kWaiting, &ts);
    }
    return true;
}

}  // namespace detail

using namespace detail;

int setThreadClass(ThreadId thread, ThreadClass threadClass) {
    ThreadContext* t = thread.context;
    if (!t || t->generation() != thread.generation) return ESRCH;
    if (uint8_t(threadClass) > uint8_t(ThreadClass::batch)) return EINVAL;
    // Release: the thread's exchange of `replace` (acquire) then reads this class or a later one.
    t->wantedClass.store(uint8_t(threadClass), std::memory_order_relaxed);
    t->replace.store(1, std::memory_order_release);
    return 0;
}

int reservedCoreOf(ThreadId thread) {
    ThreadContext* t = thread.context;
    if (!t || t->generation() != thread.generation) return -1;
    // A racy snapshot by design: a plain field the policy writes under its lock.
    const Core* core = std::atomic_ref(t->reservedCore).load(std::memory_order_acquire);
    return core ? core->id : -1;
}

ThreadId spawn(const ThreadAttributes& attributes, ThreadFunction fn, void* arg, int* err) {
    ThreadContext* t = allocateThread(attributes, err);
    if (!t) return {};
    return launchThread(t, attributes, fn, arg);
}

int join(ThreadId thread, void** result) {
    return joinImpl(thread, kNoDeadline, true, result);
}
int tryJoin(ThreadId thread, void** result) {
    return joinImpl(thread, 0, false, result);
}
int joinUntil(ThreadId thread, uint64_t deadlineNs, void** result) {
    return joinImpl(thread, deadlineNs, true, result);
}

void setExtensionReset(void (*reset)(void* extension)) {
    gExtensionReset.store(reset, std::memory_order_relaxed);
}

bool threadStack(ThreadId thread, StackBounds* out) {
    ThreadContext* t = thread.context;
    if (!t || t->generation() != thread.generation) return false;
    *out = StackBounds{t->stack.low, t->stack.size, t->stack.guard};
    return true;
}

namespace {
// Whether the handle names a thread that has not exited yet (glibc's descriptor still has a tid).
bool isLive(ThreadId thread) {
    if (!thread.context) return false;
    const uint64_t s = thread.context->lifecycle.load(std::memory_order_acquire);
    const uint64_t phase = s & kJoinMask;
    return generationOf(s) == thread.generation &&
           (phase == kJoinable || phase == kJoining || phase == kDetached);
}
}  // namespace

int setThreadPriority(ThreadId thread, int priority) {
    if (priority < 0 || priority > kMaxPriority) return EINVAL;
    if (!isLive(thread)) return ESRCH;
    thread.context->rtPriority.store(uint8_t(priority), std::memory_order_relaxed);
    return 0;
}

int threadPriority(ThreadId thread) {
    if (!isLive(thread)) return -1;
    return thread.context->rtPriority.load(std::memory_order_relaxed);
}

bool isDetached(ThreadId thread) {
    if (!thread.context) return false;
    const uint64_t s = thread.context->lifecycle.load(std::memory_order_acquire);
    return generationOf(s) == thread.generation && (s & kJoinMask) == kDetached;
}

void enableCpuClocks() {
    startCpuClocks();
}

uint64_t threadCpuNs(ThreadId thread) {
    startCpuClocks();
    return thread.context ? ticksToNs(cpuTicksOf(thread.context)) : 0;
}

uint32_t threadSlot(ThreadId thread) {
    return thread.context ? thread.context->slot : 0;
}

ThreadId threadAtSlot(uint32_t slot) {
    ThreadContext* t = contextAtSlot(slot);
    if (!t) return {};
    const uint64_t s = t->lifecycle.load(std::memory_order_acquire);
    if ((s & kJoinMask) == kFree) return {};
    return ThreadId{t, generationOf(s)};
}

void* threadExtension(ThreadId thread) {
    return thread.context ? thread.context->extension : nullptr;
}

void* selfExtension() {
    ThreadContext* t = currentContext();
    return t ? t->extension : nullptr;
}

int joinInterruptible(ThreadId thread, void** result, bool (*interrupted)()) {
    return joinImpl(thread, kNoDeadline, true, result, interrupted);
}

namespace detail {
// The carrier running `thread` now, or null (a stale handle, or a thread not running). A racy
// snapshot by design (the thread may switch out right after): atomic loads of plain fields that
// only its carrier writes.
Carrier* carrierRunning(ThreadId thread) {
    ThreadContext* t = thread.context;
    if (!t || t->generation() != thread.generation) return nullptr;
    Carrier* c = std::atomic_ref(t->carrier).load(std::memory_order_acquire);
    if (!c || std::atomic_ref(c->current).load(std::memory_order_acquire) != t) return nullptr;
    return c;
}
}  // namespace detail

int kernelTidOf(ThreadId thread) {
    const Carrier* c = carrierRunning(thread);
    return c ? GlibcTcb::userThreadId(c->nativeTcb) : 0;  // the field holds a kernel thread's tid
}

}  // namespace arbrt

namespace arbrt::embed {

using namespace arbrt::detail;

namespace {
// A pending interruption older than this is sent again (its kernel thread may have been moved
// off the core before taking it, or it targeted a thread that switched out meanwhile).
constexpr uint64_t kInterruptResendNs = 20'000'000;
}  // namespace

bool interruptCarrierOf(ThreadId thread, int sig) {
    Carrier* c = carrierRunning(thread);
    if (!c) return false;
    const uint64_t now = rdtsc();
    if (c->interruptPending.exchange(1, std::memory_order_acq_rel) != 0 &&
        now - c->interruptSentTsc.load(std::memory_order_relaxed) <
            ticksForNs(kInterruptResendNs)) {
        return true;  // the signal in flight will be taken after our state was published
    }
    c->interruptSentTsc.store(now, std::memory_order_relaxed);
    const int tid = GlibcTcb::userThreadId(c->nativeTcb);
    sysCall(SYS_tgkill, rawSyscall(SYS_getpid), tid, sig);
    return true;
}

void interruptTaken() {
    if (Carrier* c = currentCarrier()) c->interruptPending.exchange(0, std::memory_order_acq_rel);
}

void noteHeldSignal(int sig) {
    detail::noteCarrierHeldSignal(sig);
}

}  // namespace arbrt::embed

namespace arbrt {

int detach(ThreadId id) {
    ThreadContext* t = id.context;
    if (!t) return ESRCH;
    uint64_t s = t->lifecycle.load(std::memory_order_acquire);
    for (;;) {
        if (generationOf(s) != id.generation) return ESRCH;
        switch (s & kJoinMask) {
            case kJoinable:
                if (t->lifecycle.compare_exchange_weak(s, packState(id.generation, kDetached),
                                                       std::memory_order_acq_rel)) {
                    return 0;
                }
                continue;
            case kExited:
                if (joinedByOther(t, nullptr)) return EINVAL;  // its joiner is about to claim it
                if (claimExited(t, s, nullptr, false)) return 0;
                s = t->lifecycle.load(std::memory_order_acquire);
                continue;
            case kFree:
                return freedError(s);
            default:
                return EINVAL;
        }
    }
}

ThreadId self() {
    ThreadContext* t = currentContext();
    return t ? ThreadId{t, t->generation()} : ThreadId{};
}

void exit(void* result) {
    if (ThreadContext* t = currentContext()) exitCurrent(t, result);
}

namespace {
// Yields to another runnable thread of this core; false when there is none (and no reason to
// switch: no release asked for, no timer due).
bool yieldHere(ThreadContext* self) {
    Carrier* c = self->carrier;
    if (c->arbiterCpu >= 0) pollArbiter(c);
    Core* core = c->core;
    const uint64_t deadline = core->nextDeadlineTsc.load(std::memory_order_relaxed);
    // A pending class change is applied by the switch (switchTo).
    if (!hasRunnableFor(core, self) && !core->releaseRequested.load(std::memory_order_relaxed) &&
        (deadline == ~uint64_t{0} || rdtsc() < deadline) &&
        !self->replace.load(std::memory_order_relaxed)) {
        return false;  // nothing else could run here
    }
    switchAway(self, AfterSwitch::requeue);
    return true;
}
}  // namespace

void yield() {
    ThreadContext* self = currentContext();
    if (!self) {
        rawSyscall(SYS_sched_yield);
        return;
    }
    yieldHere(self);
}

void yieldCpu() {
    ThreadContext* self = currentContext();
    if (!self || !yieldHere(self)) rawSyscall(SYS_sched_yield);
}

void sleepUntil(uint64_t deadlineNs) {
    ThreadContext* self = currentContext();
    if (!self) {
        timespec ts{time_t(deadlineNs / 1'000'000'000), long(deadlineNs % 1'000'000'000)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
        }
        return;
    }
    // A sleep is not a block(): signals that arrive meanwhile are kept for the next block().
    bool signalled = false;
    while (nowNs() < deadlineNs) {
        const uint64_t before = self->runState.load(std::memory_order_relaxed);
        if (before & kPermit) signalled = true;
        blockUntilDeadline(self, deadlineNs);
        if (nowNs() < deadlineNs) signalled = true;  // woken early: only a signal does that
    }
    if (signalled) signalContext(self, self->generation());
}

void sleepFor(uint64_t ns) {
    const uint64_t now = nowNs();
    sleepUntil(ns > ~uint64_t{0} - now ? ~uint64_t{0} - 1 : now + ns);
}

void block() {
    if (ThreadContext* t = currentContext()) parkCurrent(t);
}

void blockUntil(uint64_t deadlineNs) {
    if (ThreadContext* t = currentContext()) blockUntilDeadline(t, deadlineNs);
}

void signal(ThreadId thread) {
    if (thread.context) signalContext(thread.context, thread.generation);
}

int currentCore() {
    Carrier* c = currentCarrier();
    return c ? c->core->id : -1;
}

}  // namespace arbrt
