// Process-directed signals recorded but not yet taken, and the flood control (signal_queue.h).
#include "signals/signal_queue.h"

#include <sys/syscall.h>
#include <ucontext.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <new>

#include "arbrt/arbrt.h"
#include "arbrt/embed/spin_lock.h"
#include "arbrt/embed/threads.h"
#include "io/raw_syscall.h"
#include "libc/shim.h"
#include "signals/kernel_sigaction.h"

namespace arbrun {
namespace {

using arbrt::embed::SpinLock;

bool realtime(int sig) {
    return sig >= kFirstRealtimeSignal;
}

// The record. gLock guards the instances and each head; `count` is written under it and read
// without it by heldSignalsWithRoom (a stale count only shifts when the helper takes one more).
// Everyone holds it with every real signal blocked on its kernel thread (handlers: see
// lockFromHandler).
SpinLock gLock;
struct Record {
    uint32_t head = 0;  // the oldest real-time instance's slot
    std::atomic<uint32_t> count{0};
};
Record gRecord[kMaxSignal + 1];
siginfo_t gStandard[kFirstRealtimeSignal];
siginfo_t gRealtime[kMaxSignal - kFirstRealtimeSignal + 1][kRealtimeDepth];

// Bit n-1 set while signal n has something recorded: set and cleared under gLock (or set alone by
// a handler that found it busy); read lock-free by choosers, sequentially consistent.
std::atomic<uint64_t> gPending{0};
// Signals some kernel thread may block since a flood (holdInKernel). Never cleared but by fork:
// whether every carrier unblocked one again is not known, so the helper keeps receiving it.
std::atomic<uint64_t> gHeld{0};

// While the helper waits with held signals unblocked, the kernel may hand it an instance at any
// moment: a pull elsewhere then could take a later one first. So the helper opens that window
// under gLock, and nobody else pulls while it is open (guarded by gLock).
bool gHelperWindowOpen = false;
// Threads that need the window shut (keepHelperWindowShut): the helper does not open it while
// any does, or a thread that must pull could keep finding it reopened.
std::atomic<int> gWindowShutRequests{0};
// The helper's kernel tid, for kHoldRefresh: set by its first openHelperWindow, reset by fork.
std::atomic<long> gHelperTid{0};

// How many instances of `sig` the record keeps at most, and how many the helper and the refills
// bring in from the kernel (the rest stays there until takes make room).
uint32_t capacity(int sig) {
    return realtime(sig) ? uint32_t(kRealtimeDepth) : 1u;
}
uint32_t refillLimit(int sig) {
    return realtime(sig) ? uint32_t(kRealtimeHighWater) : 1u;
}

// The calling kernel thread's real mask: `how` (SIG_BLOCK, SIG_UNBLOCK) with `bits`.
void changeRealMask(int how, uint64_t bits) {
    rawSyscall(SYS_rt_sigprocmask, how, reinterpret_cast<long>(&bits), 0, long(sizeof bits));
}

// The mask an interrupted context returns to (sigreturn gives it to the kernel thread) blocks
// `bits` too.
void blockInContext(void* ucontext, uint64_t bits) {
    sigset_t& mask = static_cast<ucontext_t*>(ucontext)->uc_sigmask;
    uint64_t m;
    std::memcpy(&m, &mask, sizeof m);  // signals 1..64: bits 0..63 of the first word
    m |= bits;
    std::memcpy(&mask, &m, sizeof m);
}

// `sig` is held from now on: the runtime learns first, before any carrier's mask holds it.
void markHeld(int sig) {
    arbrt::embed::noteHeldSignal(sig);
    gHeld.fetch_or(bit(sig), std::memory_order_seq_cst);
}

siginfo_t& slot(int sig, uint32_t index) {
    return realtime(sig) ? gRealtime[sig - kFirstRealtimeSignal][index % kRealtimeDepth]
                         : gStandard[sig];
}

// Appends an instance under gLock; false when the record is full.
bool append(int sig, const siginfo_t& info) {
    Record& r = gRecord[sig];
    const uint32_t n = r.count.load(std::memory_order_relaxed);
    if (n >= capacity(sig)) return false;
    slot(sig, r.head + n) = info;
    r.count.store(n + 1, std::memory_order_relaxed);
    return true;
}

// Takes the next instance of `sig` the kernel keeps for the process (never waits).
bool pullFromKernel(int sig, siginfo_t* info) {
    const uint64_t set = bit(sig);
    const timespec now{0, 0};
    return rawSyscall(SYS_rt_sigtimedwait, reinterpret_cast<long>(&set),
                      reinterpret_cast<long>(info), reinterpret_cast<long>(&now),
                      long(sizeof set)) == sig;
}

uint64_t heldSignalsWithRoom();

// Under gLock, with the helper's window closed: moves what the kernel keeps of the held signals
// in `set` into the record while there is room (a standard signal only when none is recorded).
void refillLocked(uint64_t set) {
    for (set &= gHeld.load(std::memory_order_relaxed); set; set &= set - 1) {
        const int sig = __builtin_ctzll(set) + 1;
        siginfo_t next;
        while (gRecord[sig].count.load(std::memory_order_relaxed) < refillLimit(sig) &&
               pullFromKernel(sig, &next)) {
            append(sig, next);
            gPending.fetch_or(bit(sig), std::memory_order_seq_cst);
        }
    }
}

// The lock from a handler. The wrapper runs with every other real signal blocked, and every
// holder blocks them all, so only SIGSYS can interrupt a holder on its own kernel thread (the
// wrapper leaves it unblocked for syscall user dispatch): for SIGSYS the lock is tried for a
// while and then given up; any other signal waits for it (a holder on another kernel thread may
// be descheduled, and an instance given up would be lost).
bool lockFromHandler(int sig) {
    if (sig != SIGSYS) {
        gLock.lock();
        return true;
    }
    for (int i = 0; i < 4096; ++i) {
        if (gLock.tryLock()) return true;
        __builtin_ia32_pause();
    }
    return false;
}

}  // namespace

uint64_t processPendingSignals() {
    return gPending.load(std::memory_order_seq_cst);
}

bool recordProcessSignal(int sig, const siginfo_t& info) {
    if (!lockFromHandler(sig)) [[unlikely]] {
        gPending.fetch_or(bit(sig), std::memory_order_seq_cst);  // taken with its number only
        return false;
    }
    const bool recorded = append(sig, info);
    gPending.fetch_or(bit(sig), std::memory_order_seq_cst);
    gLock.unlock();
    if (!recorded && realtime(sig)) {
        // Full: back to the kernel's queue (allowed whatever si_code says: it is this process).
        siginfo_t copy = info;
        rawSyscall(SYS_rt_sigqueueinfo, rawSyscall(SYS_getpid), sig, reinterpret_cast<long>(&copy));
    }
    // A standard signal that was already pending floods (this instance is dropped, as natively).
    // A real-time one is held at once: from then on only one kernel thread at a time (the helper,
    // or a taker pulling) takes its instances from the kernel's queue, in the kernel's order,
    // where several carriers receiving at once could record two instances the wrong way round.
    return realtime(sig) || !recorded;
}

TakeResult takeProcessSignal(int sig, siginfo_t* info, bool* drained) {
    *drained = false;
    std::lock_guard<SpinLock> lock(gLock);
    if (!(gPending.load(std::memory_order_relaxed) & bit(sig))) return TakeResult::none;
    const bool held = gHeld.load(std::memory_order_relaxed) & bit(sig);
    // A held standard signal is taken together with the duplicates the kernel kept, which only
    // a pull can tell from later ones: not while the helper may be receiving them.
    if (held && !realtime(sig) && gHelperWindowOpen) return TakeResult::helperBusy;
    const bool pullable = held && !gHelperWindowOpen;
    Record& r = gRecord[sig];
    if (pullable && !realtime(sig)) {
        // What the kernel kept of a standard signal arrived while this one was pending: natively
        // dropped. Its carrier receives it again from now on.
        siginfo_t dropped;
        while (pullFromKernel(sig, &dropped)) {
        }
        *drained = true;
    }
    if (const uint32_t n = r.count.load(std::memory_order_relaxed); n > 0) {
        *info = slot(sig, r.head);
        if (realtime(sig)) r.head = (r.head + 1) % kRealtimeDepth;
        r.count.store(n - 1, std::memory_order_relaxed);
    } else {
        std::memset(info, 0, sizeof *info);  // a handler could only set the bit
    }
    if (pullable && realtime(sig)) refillLocked(bit(sig));
    if (r.count.load(std::memory_order_relaxed) == 0) {
        gPending.fetch_and(~bit(sig), std::memory_order_seq_cst);
    }
    info->si_signo = sig;
    return TakeResult::taken;
}

uint64_t heldSignals() {
    return gHeld.load(std::memory_order_acquire);
}

bool refillHeldSignals(uint64_t set) {
    std::lock_guard<SpinLock> lock(gLock);
    if (gHelperWindowOpen) return false;
    refillLocked(set);
    return true;
}

void keepHelperWindowShut(bool shut) {
    gWindowShutRequests.fetch_add(shut ? 1 : -1, std::memory_order_seq_cst);
}

uint64_t openHelperWindow() {
    if (gHelperTid.load(std::memory_order_relaxed) == 0) {  // the helper's first round
        gHelperTid.store(rawSyscall(SYS_gettid), std::memory_order_relaxed);
    }
    std::lock_guard<SpinLock> lock(gLock);
    const uint64_t receive =
        gWindowShutRequests.load(std::memory_order_seq_cst) > 0 ? 0 : heldSignalsWithRoom();
    gHelperWindowOpen = receive != 0;
    return receive;
}

void closeHelperWindow() {
    std::lock_guard<SpinLock> lock(gLock);
    gHelperWindowOpen = false;
    refillLocked(~uint64_t{0});
}

void holdInKernel(int sig, void* ucontext) {
    markHeld(sig);
    blockInContext(ucontext, bit(sig));
}

namespace {
// holdEverywhere's broadcast: acknowledgements counted by adoptHeldSignals, and the calling
// thread's tid and the number of threads told, for the callback (one broadcast at a time is
// enough: a concurrent one only counts the other's acknowledgements too).
std::atomic<uint64_t> gHoldAcks{0};
std::atomic<long> gBroadcastSelf{0};
std::atomic<int> gBroadcastSent{0};

void tellToHold(int tid) {
    const long self = gBroadcastSelf.load(std::memory_order_relaxed);
    if (tid == self) return;
    siginfo_t info{};
    info.si_signo = kSigCancel;
    info.si_code = SI_QUEUE;
    info.si_pid = pid_t(rawSyscall(SYS_getpid));
    info.si_uid = uid_t(rawSyscall(SYS_getuid));
    info.si_value.sival_int = kHoldRefresh;
    if (rawSyscall(SYS_rt_tgsigqueueinfo, info.si_pid, tid, kSigCancel,
                   reinterpret_cast<long>(&info)) == 0) {
        gBroadcastSent.fetch_add(1, std::memory_order_relaxed);
    }
}
}  // namespace

bool holdEverywhere(int sig) {
    if (!realtime(sig) || (gHeld.load(std::memory_order_acquire) & bit(sig))) return false;
    markHeld(sig);
    changeRealMask(SIG_BLOCK, bit(sig));
    // The others, each by its own kernel thread; waited for (a bounded while: one that runs a
    // program's handler with every signal blocked answers late), so that no carrier still takes
    // the signal's first instances when the program goes on to be sent them.
    const uint64_t acksBefore = gHoldAcks.load(std::memory_order_acquire);
    gBroadcastSelf.store(rawSyscall(SYS_gettid), std::memory_order_relaxed);
    gBroadcastSent.store(0, std::memory_order_relaxed);
    forEachLibraryKernelThread(tellToHold);
    const uint64_t sent = uint64_t(gBroadcastSent.load(std::memory_order_relaxed));
    const uint64_t giveUp = arbrt::nowNs() + 50'000'000;
    while (gHoldAcks.load(std::memory_order_acquire) - acksBefore < sent &&
           arbrt::nowNs() < giveUp) {
        rawSyscall(SYS_sched_yield);
    }
    return true;
}

void adoptHeldSignals(void* ucontext) {
    gHoldAcks.fetch_add(1, std::memory_order_release);
    // Not on the helper: its window must stay as it opened it.
    if (rawSyscall(SYS_gettid) == gHelperTid.load(std::memory_order_relaxed)) return;
    blockInContext(ucontext, heldRealtimeSignals());
}

uint64_t heldRealtimeSignals() {
    return gHeld.load(std::memory_order_acquire) & ~(bit(kFirstRealtimeSignal) - 1);
}

void releaseHeldSignal(int sig) {
    changeRealMask(SIG_UNBLOCK, bit(sig));
}

namespace {
// Held signals whose record has room, under gLock.
uint64_t heldSignalsWithRoom() {
    uint64_t room = 0;
    for (uint64_t held = gHeld.load(std::memory_order_acquire); held; held &= held - 1) {
        const int sig = __builtin_ctzll(held) + 1;
        const uint32_t n = gRecord[sig].count.load(std::memory_order_relaxed);
        if (n < refillLimit(sig)) room |= bit(sig);
    }
    return room;
}
}  // namespace

void resetProcessSignalsAfterFork() {
    new (&gLock) SpinLock();
    for (Record& r : gRecord) {
        r.head = 0;
        r.count.store(0, std::memory_order_relaxed);
    }
    gPending.store(0, std::memory_order_relaxed);
    gHelperWindowOpen = false;
    gHelperTid.store(0, std::memory_order_relaxed);  // the child's helper is a new thread
    // Real-time signals stay held: their wrappers stay installed, and the child's carriers are
    // made from this thread's mask. Standard ones it held are its own again.
    const uint64_t held = gHeld.load(std::memory_order_relaxed) & (bit(kFirstRealtimeSignal) - 1);
    gHeld.fetch_and(~held, std::memory_order_relaxed);
    if (held) changeRealMask(SIG_UNBLOCK, held);
}

}  // namespace arbrun
