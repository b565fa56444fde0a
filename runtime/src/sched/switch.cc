// Context switches, park/unpark. A switch saves the outgoing thread's registers on its own stack
// (Boost.Context's fcontext), points %fs at the incoming thread's TCB and jumps. The outgoing
// thread is published (requeued, parked, freed) only by the context that resumes next, after its
// registers are saved, so no other carrier can resume a half-saved thread.
#include "arbrt/embed/invariant.h"
#include "platform/arch.h"
#include "sched/runtime_state.h"

namespace arbrt::detail {

using boost::context::detail::jump_fcontext;

ThreadContext* currentContext() {
    return readTcbSlot<ThreadContext>(kUserThreadSlot);
}

Carrier* currentCarrier() {
    if (ThreadContext* t = currentContext()) return t->carrier;
    return readTcbSlot<Carrier>(kCarrierSlot);
}

namespace {

// Commits a park begun by parkCurrent(): PARKING -> PARKED, unless a signal left a permit
// meanwhile, in which case the thread stays runnable (the permit is consumed by this wake-up).
void commitPark(ThreadContext* t) {
    uint64_t s = t->runState.load(std::memory_order_relaxed);
    for (;;) {
        ARB_ASSERT((s & kPhaseMask) == kParking,
                   "only parkCurrent() starts a park, and nothing else leaves kParking");
        const uint64_t base = s & ~(kPhaseMask | kPermit);
        if (s & kPermit) {
            if (t->runState.compare_exchange_weak(s, base | kRunnable, std::memory_order_acq_rel)) {
                enqueue(t, Wake::requeue);
                return;
            }
        } else if (t->runState.compare_exchange_weak(s, base | kParked,
                                                     std::memory_order_release)) {
            return;
        }
    }
}

void finishExit(ThreadContext* t);

// Whether per-thread CPU clocks run (enableCpuClocks): off until a program first asks for one,
// since the TSC read costs ~10 ns per switch. Set once, never cleared; read on every switch.
std::atomic<bool> gCpuClocksOn{false};

// Per-thread CPU clocks (ThreadContext::cpuClock): one TSC read per switch charges the outgoing
// thread and starts the incoming one. Either side may be null (the dispatcher). Relaxed: the
// clock's single word is all a reader needs, and only this carrier writes it while the thread is
// switching. Done before the switch's action publishes `from` to other carriers.
inline void accountSwitch(ThreadContext* from, ThreadContext* to) {
    const uint64_t now = rdtsc();
    if (from) {
        const uint64_t c = from->cpuClock.load(std::memory_order_relaxed);
        if (c & kRunningBit)
            from->cpuClock.store(now - (c & ~kRunningBit), std::memory_order_relaxed);
    }
    if (to) {
        const uint64_t c = to->cpuClock.load(std::memory_order_relaxed);
        if (!(c & kRunningBit))
            to->cpuClock.store(kRunningBit | (now - c), std::memory_order_relaxed);
    }
}

}  // namespace

void startCpuClocks() {
    if (gCpuClocksOn.load(std::memory_order_relaxed)) return;
    gCpuClocksOn.store(true, std::memory_order_relaxed);
    // The caller's own clock starts now (it owns the word while it runs); threads running on other
    // carriers start at their next switch.
    if (ThreadContext* self = currentContext()) {
        const uint64_t c = self->cpuClock.load(std::memory_order_relaxed);
        if (!(c & kRunningBit)) {
            self->cpuClock.store(kRunningBit | (rdtsc() - c), std::memory_order_relaxed);
        }
    }
}

uint64_t cpuTicksOf(const ThreadContext* t) {
    const uint64_t c = t->cpuClock.load(std::memory_order_relaxed);
    if (!(c & kRunningBit)) return c;
    const uint64_t base = c & ~kRunningBit;
    const uint64_t now = rdtsc();
    return now > base ? now - base : 0;
}

void completeSwitch(transfer_t t) {
    auto* record = static_cast<SwitchRecord*>(t.data);
    ThreadContext* from = record->from;
    if (gCpuClocksOn.load(std::memory_order_relaxed)) accountSwitch(from, currentContext());
    if (!from) {
        record->carrier->dispatcherContext = t.fctx;
        return;
    }
    from->savedContext = t.fctx;
    switch (record->action) {
        case AfterSwitch::nothing:
            break;
        case AfterSwitch::queued:
            from->switching.store(false, std::memory_order_release);
            break;
        case AfterSwitch::requeue:
            enqueue(from, Wake::requeue);
            break;
        case AfterSwitch::park:
            commitPark(from);
            break;
        case AfterSwitch::exit:
            finishExit(from);
            break;
        case AfterSwitch::rejoin:
            enqueue(from, Wake::wakeup);
            break;
    }
}

void rejoinAfterLend(ThreadContext* self) {
    Carrier* c = self->carrier;
    if (c->core->cohortDispatch) [[unlikely]]
        noteResumeTag(self);  // queued at the resume point of its blocking call
    c->record.from = self;
    c->record.action = AfterSwitch::rejoin;
    std::atomic_ref(c->current).store(nullptr, std::memory_order_relaxed);
    setThreadPointer(c->nativeTcb);
    transfer_t t = jump_fcontext(c->dispatcherContext, &c->record);
    completeSwitch(t);  // resumed by whichever carrier took us from the run queue
}

void switchAway(ThreadContext* self, AfterSwitch action) {
    switchTo(self, nullptr, action);
}

namespace {

// Stack `self` must have left below the caller's frame to wait in place (waitInPlace): the idle
// pass with the netpoll's event buffer and a wake-up's calls need a few KiB, and signals taken
// meanwhile push their frames (an XSAVE area of up to ~11 KiB with AVX-512) there too. A thread
// on a stack of its own making (a coroutine's, found outside its own) never waits in place.
constexpr size_t kWaitInPlaceStackBytes = 64 * 1024;

bool roomToWaitInPlace(const ThreadContext* self) {
    const char* sp = static_cast<const char*>(__builtin_frame_address(0));
    const char* floor = static_cast<const char*>(self->stack.low) + self->stack.guard;
    return self->stack.size != 0 && self->stack.contains(sp) &&
           size_t(sp - floor) > kWaitInPlaceStackBytes;
}

// A thread that waited in place resumes: its permit, which ended the wait, is consumed and it is
// runnable again (acquire: pairs with the signaller's release, as a wake-up from kParked does).
// Nothing else changes a kParking thread's permitted state, so the CAS only retries spuriously.
void resumeInPlace(ThreadContext* self) {
    uint64_t s = self->runState.load(std::memory_order_relaxed);
    for (;;) {
        ARB_ASSERT((s & kPhaseMask) == kParking && (s & kPermit) != 0,
                   "a thread waiting in place resumes on its permit, still kParking");
        if (self->runState.compare_exchange_weak(s, s & ~(kPhaseMask | kPermit),
                                                 std::memory_order_acquire)) {
            return;
        }
    }
}

// A permit was just left on `t`, which was kParking: if its carrier waits for work on its stack
// (waitInPlace), that core is woken unless it is our own (then we are its idle pass, which looks
// at the permit next). The fence pairs with waitInPlace()'s.
void wakeWaiterInPlace(ThreadContext* t) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const int id = t->waitingOnCore.load(std::memory_order_relaxed);
    if (id < 0) return;
    Core* on = &gRuntime->cores[id];
    if (Carrier* self = currentCarrier();
        self && on->carrier.load(std::memory_order_relaxed) == self)
        return;
    wakeIfSleeping(on);
}

// A wait inside a blocking-call bracket (code the bracket covers parked or yielded): the stamp
// would stay on this core while other threads run here, and the monitor could lend a core its
// carrier still runs. So before `self` switches, an open bracket (its core has a stamp, or was lent
// meanwhile) is closed, which may first move `self` to another carrier through the run queue if
// the core was lent; true then, and the caller reopens it where `self` resumes. Two loads: the
// stamp shares the line of releaseRequested, which a switch reads anyway; the core's `carrier` is
// read-mostly.
bool closeBracketBeforeSwitch(ThreadContext* self) {
    const Carrier* c = self->carrier;
    const Core* core = c->core;
    if (core->blockingSince.load(std::memory_order_relaxed) == 0 &&
        core->carrier.load(std::memory_order_relaxed) == c) [[likely]] {
        return false;
    }
    leaveBlockingCall(self);
    return true;
}

}  // namespace

void switchTo(ThreadContext* self, ThreadContext* next, AfterSwitch action) {
    ARB_ASSERT(rankedLocksHeld() == 0, "a user thread switches out holding a runtime lock");
    // A park closed it already (parkCurrent), before its phase changed.
    const bool inBlockingCall = action != AfterSwitch::park && closeBracketBeforeSwitch(self);
    ARB_ASSERT(!inBlockingCall || next == nullptr,
               "a direct hand-off is only made by an exiting thread, never inside a bracket");
    Carrier* c = self->carrier;
    Core* core = c->core;
    // Barrier-aware release (park_history.h): the park rhythm tells the release watcher when this
    // thread will next park. Two TSC reads per park (here and at the resume), and only where
    // cores can be asked back; only this thread writes it.
    bool trackRhythm = false;
    if (c->arbiterCpu >= 0) {
        pollArbiter(c);
        if (action == AfterSwitch::park) {
            trackRhythm = true;
            recordPark(&self->parkRhythm, rdtsc());
        }
    }
    // A class change waits for the thread's switch, so it never moves while it runs or is queued
    // (core_policy.h). One load of the thread's first line. A thread now confined to another core
    // is made runnable there after the switch (rejoin), not queued here.
    if (self->replace.load(std::memory_order_relaxed) && action != AfterSwitch::exit) [[unlikely]] {
        if (gRuntime->policy.replaceAtSwitch(self, core) && action == AfterSwitch::requeue) {
            action = AfterSwitch::rejoin;
        }
    }
    if (!next && !core->releaseRequested.load(std::memory_order_relaxed) &&
        !core->lendBack.load(std::memory_order_relaxed)) {
        fireExpiredTimers(core);
        if (action == AfterSwitch::requeue) {
            // A yield gives every runnable thread a turn: a thread waiting in runNext joins the
            // queue first, or two threads yielding to each other would starve it forever.
            if (core->runNext.load(std::memory_order_relaxed)) flushRunNext(core);
            next = swapWithNext(core, self);
            if (next) {
                action = AfterSwitch::queued;
            } else if (self->queueClass == kNormalQueue) {
                // Only runNext was waiting (requeue after the switch), or only batch threads
                // wait: they never take the core from a normal thread.
                next = takeNextNormal(core);
            } else {
                next = takeNext(core);
            }
        } else {
            next = takeNext(core);
        }
    }
    core->contextSwitches.store(core->contextSwitches.load(std::memory_order_relaxed) + 1,
                                std::memory_order_relaxed);
    // Cohort dispatch: the tag a core's scan compares, from the resume point this thread parks
    // or is queued at (one byte load of the core's runNext line otherwise).
    if (core->cohortDispatch) [[unlikely]]
        noteResumeTag(self);
    // Re-arms syscall user dispatch after a clone ran in place (syscall_dispatch.h): one load of
    // the carrier's own line.
    if (c->syscallSelector.load(std::memory_order_relaxed) != 1 /*kSyscallsTrapped*/) [[unlikely]] {
        c->syscallSelector.store(1, std::memory_order_relaxed);
    }
    if (!next && action == AfterSwitch::park && roomToWaitInPlace(self)) {
        if (gCpuClocksOn.load(std::memory_order_relaxed)) accountSwitch(self, nullptr);
        next = waitInPlace(c, self);
        if (next == self) {
            resumeInPlace(self);
            core->threadStarts.store(core->threadStarts.load(std::memory_order_relaxed) + 1,
                                     std::memory_order_relaxed);
            core->resumedInPlace.store(core->resumedInPlace.load(std::memory_order_relaxed) + 1,
                                       std::memory_order_relaxed);  // owner-only
            std::atomic_ref(c->current).store(self, std::memory_order_relaxed);
            // A reservation of this core for another thread (CorePolicy) marks the core's running
            // thread to move at its next switch: it read `current` null while we waited, so we
            // look at the reservation ourselves (Dekker's pairing, as with a runner it saw).
            std::atomic_thread_fence(std::memory_order_seq_cst);
            if (!acceptsThread(core, self)) [[unlikely]]
                self->replace.store(1, std::memory_order_relaxed);
            if (gCpuClocksOn.load(std::memory_order_relaxed)) accountSwitch(nullptr, self);
            if (trackRhythm) recordResume(&self->parkRhythm, rdtsc());
            return;
        }
    }
    c->record.from = self;
    c->record.action = action;
    transfer_t t;
    if (next) {
        core->threadStarts.store(core->threadStarts.load(std::memory_order_relaxed) + 1,
                                 std::memory_order_relaxed);  // owner-only: no locked increment
        std::atomic_ref(c->current).store(next, std::memory_order_relaxed);
        std::atomic_ref(next->carrier).store(c, std::memory_order_relaxed);
        setThreadPointer(next->tcb);
        t = jump_fcontext(next->savedContext, &c->record);
    } else {
        std::atomic_ref(c->current).store(nullptr, std::memory_order_relaxed);
        setThreadPointer(c->nativeTcb);
        t = jump_fcontext(c->dispatcherContext, &c->record);
    }
    // Resumed, possibly on another carrier: only `t` says which.
    completeSwitch(t);
    if (trackRhythm) recordResume(&self->parkRhythm, rdtsc());  // the next burst starts
    if (inBlockingCall) [[unlikely]]
        reopenBlockingCall(self);
}

bool claimParked(ThreadContext* t, uint32_t generation) {
    uint64_t parked = packState(generation, kParked);
    return t->runState.compare_exchange_strong(parked, packState(generation, kRunnable),
                                               std::memory_order_acq_rel);
}

void signalContext(ThreadContext* t, uint32_t generation, Wake how) {
    uint64_t s = t->runState.load(std::memory_order_acquire);
    for (;;) {
        if (generationOf(s) != generation)
            return;  // recycled: the signal was for an earlier thread
        if ((s & kPhaseMask) == kParked) {
            if (t->runState.compare_exchange_weak(s, packState(generation, kRunnable),
                                                  std::memory_order_acq_rel)) {
                enqueue(t, how);
                return;
            }
        } else if (s & kPermit) {
            return;
        } else if (t->runState.compare_exchange_weak(s, s | kPermit, std::memory_order_acq_rel)) {
            if ((s & kPhaseMask) == kParking) wakeWaiterInPlace(t);
            return;
        }
    }
}

void parkCurrent(ThreadContext* self) {
    // Before the phase says kParking: closing a bracket may pass the thread through a run queue,
    // which only a runnable thread joins.
    const bool inBlockingCall = closeBracketBeforeSwitch(self);
    uint64_t s = self->runState.load(std::memory_order_acquire);
    for (;;) {
        ARB_ASSERT((s & kPhaseMask) == kRunnable, "a running thread is in phase kRunnable");
        if (s & kPermit) {
            if (self->runState.compare_exchange_weak(s, s & ~kPermit, std::memory_order_acquire)) {
                if (inBlockingCall) [[unlikely]]
                    reopenBlockingCall(self);
                return;
            }
        } else if (self->runState.compare_exchange_weak(s, (s & ~kPhaseMask) | kParking,
                                                        std::memory_order_relaxed)) {
            break;
        }
    }
    switchAway(self, AfterSwitch::park);
    if (inBlockingCall) [[unlikely]]
        reopenBlockingCall(self);
}

namespace {

// The exiting thread's stack is no longer in use: publish its result to a joiner, or free it.
// Publishes the exited thread's state to its joiner, or frees it if detached.
void publishExit(ThreadContext* t) {
    uint64_t s = t->lifecycle.load(std::memory_order_acquire);
    for (;;) {
        const uint32_t gen = generationOf(s);
        switch (s & kJoinMask) {
            case kJoinable:
                if (t->lifecycle.compare_exchange_weak(s, packState(gen, kExited),
                                                       std::memory_order_acq_rel)) {
                    return;
                }
                break;
            case kJoining: {
                // Read before the CAS: the joiner may return after it.
                Waiter* joiner = t->joiner.load(std::memory_order_relaxed);
                ARB_ASSERT(joiner != nullptr,
                           "kJoining is set only after the joiner slot is claimed");
                if (t->lifecycle.compare_exchange_weak(s, packState(gen, kExited),
                                                       std::memory_order_acq_rel)) {
                    wake(joiner);
                    return;
                }
                break;
            }
            case kExiting:
                // Its joiner was woken by exitCurrent() and nothing else changes lifecycle in this
                // phase (join, detach and tryJoin only read it), so a store publishes it.
                t->lifecycle.store(packState(gen, kExited), std::memory_order_release);
                return;
            case kDetached:
                if (t->lifecycle.compare_exchange_weak(s, packState(gen + 1, kFree),
                                                       std::memory_order_acq_rel)) {
                    releaseContext(t);
                    return;
                }
                break;
            default:
                ARB_UNREACHABLE("an exiting thread is joinable, being joined, or detached");
                return;
        }
    }
}

void finishExit(ThreadContext* t) {
    const bool last = gRuntime->liveThreads.fetch_sub(1, std::memory_order_relaxed) == 1;
    // While batch threads live the arbiter request depends on the normal threads (thread.cc).
    if (gRuntime->policy.batchThreads() != 0) [[unlikely]]
        requestChanged();
    publishExit(t);
    // When core 0 is run by a kernel thread no host waits on (a fork child's forking thread, the
    // embedder's main thread), nothing waits for the last thread either: the process exits here,
    // with status 0, as glibc's last exiting thread makes it do.
    if (last && gRuntime->coreZeroCarrier.load(std::memory_order_acquire) == kCoreZeroCallerRuns)
        [[unlikely]]
        std::exit(0);
}

}  // namespace
}  // namespace arbrt::detail
