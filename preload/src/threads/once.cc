// pthread_once on the runtime's parking lot. The control word keeps glibc 2.36's encoding, so
// PTHREAD_ONCE_INIT, zero-filled memory and a control completed by the real libc all mean the same:
//   0                       not run yet
//   bit 1 set (2)           done (__PTHREAD_ONCE_DONE): every later call returns at once
//   (pid << 2) | 1          in progress in process `pid`; glibc keeps its fork generation in
//                           those bits. A child of fork() whose parent was running the routine
//                           finds another pid there and starts over (the running thread does not
//                           exist in the child), which is what glibc's generation check achieves.
// Callers that find it in progress park on the control word. If the routine does not return
// (cancellation, pthread_exit, a C++ exception) the word goes back to 0 and the waiters are woken,
// so one of them runs the routine again, as glibc's cleanup handler does.
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "arbrt/arbrt.h"
#include "io/raw_syscall.h"
#include "libc/shim.h"
#include "signals/interrupt.h"

namespace arbrun {
namespace {

constexpr int kInProgress = 1, kDone = 2;

std::atomic<int>& controlWord(pthread_once_t* once) {
    return *reinterpret_cast<std::atomic<int>*>(once);
}

// Publishes the outcome when the routine returns or is unwound through: done (release: its
// effects are visible to every caller that sees kDone) or back to "not run", then wakes waiters.
class RunGuard {
  public:
    explicit RunGuard(std::atomic<int>& word) : word_(word) {}
    RunGuard(const RunGuard&) = delete;
    RunGuard& operator=(const RunGuard&) = delete;
    ~RunGuard() {
        word_.store(completed_ ? kDone : 0, std::memory_order_release);
        arbrt::unpark(&word_, ~size_t{0});
    }
    void markCompleted() { completed_ = true; }

  private:
    std::atomic<int>& word_;
    bool completed_ = false;
};

// Slow path: claim the control word or wait for the thread that did.
int runOrWait(std::atomic<int>& word, void (*init)()) {
    // Raw: a pc in libc's getpid would let a pending signal run its handler nested in here.
    const int mine = (int(rawSyscall(SYS_getpid)) << 2) | kInProgress;
    for (;;) {
        int v = word.load(std::memory_order_acquire);
        if (v & kDone) return 0;
        if (v == mine) {
            // Not a cancellation point: a signal's handler runs, then the wait goes on.
            const auto r = arbrt::parkInterruptible(
                &word, [&] { return word.load(std::memory_order_relaxed) == mine; },
                arbrt::kNoDeadline, [] { return signalInterruptPending(); });
            if (r == arbrt::ParkResult::interrupted) runSignalHandlers();
            continue;
        }
        // 0, or in progress in the process we were forked from: claim it.
        if (word.compare_exchange_strong(v, mine, std::memory_order_acquire)) {
            RunGuard guard(word);
            init();
            guard.markCompleted();
            return 0;
        }
    }
}

int callOnce(pthread_once_t* control, void (*init)()) {
    std::atomic<int>& word = controlWord(control);
    if (word.load(std::memory_order_acquire) & kDone) return 0;  // pairs with RunGuard's store
    return runOrWait(word, init);
}

}  // namespace
}  // namespace arbrun

ARBRUN_EXPORT int pthread_once(pthread_once_t* once, void (*init)()) {
    return arbrun::callOnce(once, init);
}

// The old name, still bound by binaries linked against glibc before 2.34.
ARBRUN_EXPORT int __pthread_once(pthread_once_t* once, void (*init)()) {
    return arbrun::callOnce(once, init);
}
