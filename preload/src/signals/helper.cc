// The helper thread (helper.h): its loop, how it picks the thread a process-directed signal goes
// to, and its retries.
#include "signals/helper.h"

#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>

#include "arbrt/arbrt.h"
#include "arbrt/embed/host.h"
#include "io/raw_syscall.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "signals/kernel_sigaction.h"
#include "signals/signal_queue.h"
#include "signals/signal_registry.h"
#include "signals/signals.h"
#include "threads/cancel.h"
#include "threads/thread_state.h"

namespace arbrun {
namespace {

// Woken through gHelperWord (a futex): 1 once a pass is wanted, exchanged to 0 by the helper at
// the top of each pass (acquire; wakeHelper's store is release).
std::atomic<uint32_t> gHelperWord{0};

// Written once, under startHelperOnce's once flag (release); read by pendProcess and after fork.
std::atomic<bool> gHelperStarted{false};

// Makes the user thread `t` look at its pending signals: wakes it from an interruptible wait
// (arbrt::signal) and interrupts it where it runs now, if it computes at a safe point. True when
// it was running (its carrier was interrupted: it may have refused, see interruptUserThread).
bool alertThread(arbrt::ThreadId t) {
    arbrt::signal(t);
    return interruptUserThread(t);
}

// What an alerting pass left behind (the helper's retry policy).
enum class Outstanding { none, waiting, running };

Outstanding worse(Outstanding a, Outstanding b) {
    return int(a) > int(b) ? a : b;
}

// Picks the thread that should take process-pending `sig`: the main thread if it wants it (as the
// kernel does), else one waiting for it in sigwait, else one that does not block it, and alerts
// it. Runs in normal context (the helper thread).
Outstanding distribute(int sig) {
    if (!(processPendingSignals() & bit(sig))) return Outstanding::none;
    arbrt::ThreadId pick{};
    gRegistryLock.lock();
    if (SignalThreadState* leader = gLeader.load(std::memory_order_relaxed);
        leader && wants(leader, sig)) {
        pick = leader->self;
    }
    for (SignalThreadState* t = gRegistryHead; t && !pick; t = t->next) {
        if (t->waitingFor.load(std::memory_order_seq_cst) & bit(sig)) pick = t->self;
    }
    for (SignalThreadState* t = gRegistryHead; t && !pick; t = t->next) {
        if (!(t->blocked.load(std::memory_order_seq_cst) & bit(sig))) pick = t->self;
    }
    gRegistryLock.unlock();
    if (!pick) return Outstanding::none;  // nobody takes it now: a mask change will
    SignalThreadState* taker = &shimStateOf(pick)->signals;
    taker->chosenAsTaker.store(1, std::memory_order_seq_cst);
    gTaker[sig].store(taker, std::memory_order_release);
    return alertThread(pick) ? Outstanding::running : Outstanding::waiting;
}

// Alerts again the running threads that have thread-directed signals they do not block (sent with
// pthread_kill while they computed somewhere their carrier's interruption was refused), or an
// asynchronous cancellation they have not acted on (its SIGCANCEL landed inside this library, and
// a thread that computes between interposed calls may never reach a point that acts on it). The
// cancellation word is read under the registry lock: a registered thread's TCB is live.
Outstanding realertThreads(bool retryCancels) {
    constexpr int kBatch = 16;
    arbrt::ThreadId targets[kBatch];
    bool cancels[kBatch];
    int n = 0;
    gRegistryLock.lock();
    for (SignalThreadState* t = gRegistryHead; t && n < kBatch; t = t->next) {
        const bool signal = t->pending.load(std::memory_order_seq_cst) &
                            ~t->blocked.load(std::memory_order_seq_cst);
        const bool cancel = !signal && retryCancels && asyncCancelOutstanding(t->self);
        if (signal || cancel) {
            cancels[n] = cancel;
            targets[n++] = t->self;
        }
    }
    gRegistryLock.unlock();
    Outstanding left = Outstanding::none;
    for (int i = 0; i < n; ++i) {
        const bool running =
            cancels[i] ? retryAsyncCancel(targets[i]) : interruptUserThread(targets[i]);
        if (running) left = Outstanding::running;
    }
    return left;
}

// When pthread_cancel last asked for an asynchronous cancellation (nowNs): written by any user
// thread, read by the helper, relaxed (a stale value only shifts one retry by a period).
std::atomic<uint64_t> gLastAsyncCancelNs{0};

// The helper's loop. A signal handed to a thread stays pending until that thread takes it. One
// that runs inside libc or this library when its carrier is interrupted takes it only at its next
// interruptible point, which a thread looping in calls that never wait may not reach for long: it
// is interrupted again every millisecond while it runs. A process-directed signal whose taker is
// parked (in a wait no signal ends) is handed out again after 2, 4, ... up to 128 ms (another
// thread may unblock it meanwhile).
void helperLoop() {
    constexpr long kRunningRetryNs = 1'000'000, kMaxRetryNs = 128'000'000;
    long waitNs = 0;  // 0: nothing outstanding
    for (;;) {
        if (gHelperWord.exchange(0, std::memory_order_acquire) == 0) {
            // Held signals with room in the record reach it through this thread while it waits,
            // in its window (signal_queue.h). One delivered as the mask opens sets gHelperWord
            // through pendProcess: the wait below then returns at once.
            const uint64_t receive = openHelperWindow();
            if (receive) setRealMask(~receive, nullptr);
            timespec pause{0, waitNs};
            rawSyscall(SYS_futex, reinterpret_cast<long>(&gHelperWord), FUTEX_WAIT_PRIVATE, 0,
                       waitNs ? reinterpret_cast<long>(&pause) : 0);
            if (receive) setRealMask(~uint64_t{0}, nullptr);
        }
        if (heldSignals()) closeHelperWindow();
        // A cancellation is retried only once its own SIGCANCEL had time to act: a second one
        // right behind it would only reach the thread while it unwinds (watchAsyncCancel).
        const bool retryCancels =
            arbrt::nowNs() - gLastAsyncCancelNs.load(std::memory_order_relaxed) >=
            uint64_t(kRunningRetryNs);
        Outstanding left = realertThreads(retryCancels);
        if (!retryCancels) left = worse(left, Outstanding::running);
        uint64_t sigs = processPendingSignals();
        while (sigs) {
            const int sig = __builtin_ctzll(sigs) + 1;
            sigs &= sigs - 1;
            left = worse(left, distribute(sig));
        }
        if (left == Outstanding::running) {
            waitNs = kRunningRetryNs;
        } else if (left == Outstanding::waiting) {
            waitNs = waitNs ? std::min(2 * waitNs, kMaxRetryNs) : 2 * kRunningRetryNs;
        } else {
            waitNs = 0;
        }
    }
}

// Creates the helper thread. glibc's pthread_create must see a thread it knows (its thread list,
// the set*id broadcast that walks it): on a user thread (the helper is started when the program
// first touches signals) it runs on the carrier's own TCB, as the runtime's monitor is made.
void startHelper() {
    arbrt::runOnKernelThreadTcb(
        [](void*) {
            pthread_t thread;
            sigset_t all, saved;
            sigfillset(&all);
            ARBRUN_REAL(pthread_sigmask)(SIG_SETMASK, &all, &saved);  // inherited: blocks all
            const int err = createKernelThread(
                &thread, nullptr,
                [](void*) -> void* {
                    helperLoop();
                    return nullptr;
                },
                nullptr);
            ARBRUN_REAL(pthread_sigmask)(SIG_SETMASK, &saved, nullptr);
            if (err == 0) ARBRUN_REAL(pthread_detach)(thread);
        },
        nullptr);
}

}  // namespace

void wakeHelper() {
    gHelperWord.store(1, std::memory_order_release);
    rawSyscall(SYS_futex, reinterpret_cast<long>(&gHelperWord), FUTEX_WAKE_PRIVATE, 1);
}

bool helperStarted() {
    return gHelperStarted.load(std::memory_order_acquire);
}

// No helper for a program that never makes signals its business (helper.h): one creation less
// per start, and one thread less for exit to wait for, which a loaded host delays by milliseconds.
void startHelperOnce() {
    static std::once_flag once;
    std::call_once(once, [] {
        startHelper();
        gHelperStarted.store(true, std::memory_order_release);
    });
}

// A thread that found the helper's window open: keeps it from reopening (once) and wakes the
// helper, which closes it at once; then lets the helper go on (reopenHelperWindow).
void waitForHelperWindowToShut(bool* shut) {
    if (!*shut) {
        keepHelperWindowShut(true);
        *shut = true;
    }
    wakeHelper();
    rawSyscall(SYS_sched_yield);
}

void reopenHelperWindow() {
    keepHelperWindowShut(false);
    wakeHelper();
}

void resetHelperAfterFork() {
    gHelperWord.store(0, std::memory_order_relaxed);
}

void restartSignalHelperAfterFork() {
    if (gHelperStarted.load(std::memory_order_acquire)) startHelper();
}

void watchAsyncCancel() {
    initCodeRanges();  // the helper may not exist yet in a program that never touched signals
    startHelperOnce();
    gLastAsyncCancelNs.store(arbrt::nowNs(), std::memory_order_relaxed);
    wakeHelper();
}

}  // namespace arbrun
