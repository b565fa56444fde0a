// pthread thread management mapped onto user threads. pthread_t is the user thread's TCB address,
// so glibc's own pthread_self()/pthread_equal() agree with what pthread_create() returned.
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <sys/single_threaded.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "arbrt/arbrt.h"
#include "arbrt/embed/resume_point.h"
#include "arbrt/embed/threads.h"
#include "libc/pthread_fields.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "libc/stdio_locks.h"
#include "signals/interrupt.h"
#include "signals/signals.h"
#include "threads/attr.h"
#include "threads/classes.h"
#include "threads/identity.h"
#include "threads/keys.h"
#include "threads/schedule.h"
#include "threads/tid_address.h"

namespace arbrun {
namespace {

using pthread_field::kCancelHandling;
using pthread_field::kCleanup;
using pthread_field::kCleanupJmpBuf;
using pthread_field::kResult;

template <typename T>
T& tcbField(void* tcb, size_t offset) {
    return pthread_field::at<T>(tcb, offset);
}

struct StartInfo {
    void* (*start)(void*);
    void* arg;
    uint64_t signalMask;  // inherited from the creator (signals.h)
};

// Every pthread-created user thread starts here. Like glibc's start_thread it provides the jump
// buffer that pthread_exit() and cancellation unwind to (glibc's own __pthread_unwind runs the C++
// destructors and cleanup handlers on the way), and returns the value pthread_exit() stored.
void* pthreadTrampoline(void* raw) {
    const StartInfo info = *static_cast<StartInfo*>(raw);
    void* tcb = arbrt::embed::tcbOf(arbrt::self().context);
    signalThreadStart(info.signalMask);
    __pthread_unwind_buf_t unwindBuf;
    void* result;
    if (__sigsetjmp(reinterpret_cast<__jmp_buf_tag*>(unwindBuf.__cancel_jmp_buf), 0) == 0) {
        std::memset(unwindBuf.__pad, 0, sizeof unwindBuf.__pad);
        tcbField<void*>(tcb, kCleanupJmpBuf) = &unwindBuf;
        result = info.start(info.arg);
    } else {
        result = tcbField<void*>(tcb, kResult);  // pthread_exit() or cancellation unwound to here
    }
    // thread_local destructors, then pthread keys, as glibc's start_thread does: with the jump
    // buffer still set, so a destructor that calls pthread_exit() still ends the thread here.
    runKeyDestructors();
    tcbField<void*>(tcb, kCleanupJmpBuf) = nullptr;
    signalThreadEnd();
    clearChildTidAtExit();
    return result;
}

int timedJoin(pthread_t thread, void** result, clockid_t clock, const timespec* abstime) {
    uint64_t deadline;
    if (int err = deadlineFrom(clock, abstime, &deadline)) return err;
    return arbrt::joinUntil(userThread(thread), deadline, result);
}

}  // namespace
}  // namespace arbrun

using namespace arbrun;

namespace arbrun {

namespace {

// Creates a user thread, honouring the affinity mask and scheduling of `attr` (null: inherits its
// creator's) and recording its class (null: none computed) before it can run, since it may name
// itself at once.
int createWith(arbrt::ThreadAttributes attributes, const pthread_attr_t* attr,
               void* (*start)(void*), void* arg, pthread_t* thread,
               const NewThreadClass* threadClass) {
    ScheduleSettings schedule;
    int err = newThreadSchedule(attr, &schedule, &attributes.priority);
    if (err) return err;
    cpu_set_t* mask;
    err = newThreadMask(attr, &mask);
    if (err) return err;
    arbrt::embed::ThreadContext* context = arbrt::embed::allocateThread(attributes, &err);
    if (!context) {
        std::free(mask);
        return err;
    }
    const arbrt::ThreadId id = arbrt::embed::threadFromTcb(arbrt::embed::tcbOf(context));
    initIdentity(id, mask);
    initSchedule(id, schedule);
    if (threadClass) recordThreadClass(id, *threadClass);
    void* space = arbrt::embed::reserveClosureSpace(context, sizeof(StartInfo), alignof(StartInfo));
    new (space) StartInfo{start, arg, currentSignalMask()};
    // Reset before the thread can run: a pthread_cancel right after creation must stick.
    void* tcb = arbrt::embed::tcbOf(context);
    tcbField<int>(tcb, kCancelHandling) = 0;
    tcbField<void*>(tcb, kCleanup) = nullptr;
    // Set before the thread can run: it may read the variable the caller passed.
    *thread = reinterpret_cast<pthread_t>(arbrt::embed::tcbOf(context));
    bool noCoreReserved = false;
    arbrt::embed::launchThread(context, attributes, pthreadTrampoline, space, &noCoreReserved);
    if (noCoreReserved && threadClass) reportExclusiveFallback(*threadClass);
    return 0;
}

}  // namespace

int createUserThread(const arbrt::ThreadAttributes& attributes, void* (*start)(void*), void* arg,
                     pthread_t* thread, const NewThreadClass* threadClass) {
    return createWith(attributes, nullptr, start, arg, thread, threadClass);
}

}  // namespace arbrun

ARBRUN_EXPORT int pthread_create(pthread_t* thread, const pthread_attr_t* attr,
                                 void* (*start)(void*), void* arg) {
    if (ensureStarted() != Mode::runtime)
        return ARBRUN_REAL(pthread_create)(thread, attr, start, arg);
    restoreStdioLocks();  // the program's second thread: its streams lock from now on
    // glibc's pthread_create clears it before the new thread exists, and libstdc++'s reference
    // counts, malloc and stdio read it. A user thread is made without glibc, and this library
    // creates no kernel thread for a program that has one thread (which then reads it as natively:
    // true): the runtime's own creations clear it too, but only when they happen.
    __libc_single_threaded = 0;
    arbrt::ThreadAttributes attributes;
    if (int err = readAttributes(attr, &attributes)) return err;
    if (!classesActive()) return createWith(attributes, attr, start, arg, thread, nullptr);
    NewThreadClass threadClass;  // --class rules, --default-class or explaining: classes.h
    classifyNewThread(start, __builtin_return_address(0), &threadClass);
    attributes.threadClass = threadClass.runtimeClass();
    return createWith(attributes, attr, start, arg, thread, &threadClass);
}

ARBRUN_EXPORT int pthread_join(pthread_t thread, void** result) {
    ARBRT_RESUME_POINT();
    const arbrt::ThreadId id = userThread(thread);
    if (!id) return ARBRUN_REAL(pthread_join)(thread, result);
    if (!onUserThread()) return arbrt::join(id, result);
    // A cancellation point: signals and cancellation interrupt the wait (interrupt.h).
    for (;;) {
        const int err = arbrt::joinInterruptible(id, result, [] { return interruptPending(); });
        if (err != EINTR) return err;
        deliverInterrupts();
    }
}

ARBRUN_EXPORT int pthread_tryjoin_np(pthread_t thread, void** result) {
    const arbrt::ThreadId id = userThread(thread);
    if (!id) return ARBRUN_REAL(pthread_tryjoin_np)(thread, result);
    // glibc's tryjoin answers EBUSY for any thread whose tid is not 0, which includes a joined
    // thread (tid -1): where a join says ESRCH, tryjoin says EBUSY.
    const int err = arbrt::tryJoin(id, result);
    return err == ESRCH ? EBUSY : err;
}

ARBRUN_EXPORT int pthread_timedjoin_np(pthread_t thread, void** result, const timespec* abstime) {
    ARBRT_RESUME_POINT();
    if (!userThread(thread)) return ARBRUN_REAL(pthread_timedjoin_np)(thread, result, abstime);
    return timedJoin(thread, result, CLOCK_REALTIME, abstime);
}

ARBRUN_EXPORT int pthread_clockjoin_np(pthread_t thread, void** result, clockid_t clock,
                                       const timespec* abstime) {
    ARBRT_RESUME_POINT();
    if (!userThread(thread))
        return ARBRUN_REAL(pthread_clockjoin_np)(thread, result, clock, abstime);
    return timedJoin(thread, result, clock, abstime);
}

ARBRUN_EXPORT int pthread_detach(pthread_t thread) {
    const arbrt::ThreadId id = userThread(thread);
    if (!id) return ARBRUN_REAL(pthread_detach)(thread);
    return arbrt::detach(id);
}

ARBRUN_EXPORT int sched_yield() {
    if (!onUserThread()) return ARBRUN_REAL(sched_yield)();
    arbrt::yieldCpu();  // another user thread of this core, else the CPU, as natively
    // A signal sent meanwhile runs its handler on return, as after the native system call, and an
    // asynchronous cancellation acts, as it would natively in the system call: its SIGCANCEL is
    // refused while the thread runs in here, and a thread that loops on sched_yield is in here
    // nearly all the time: it would never be cancelled.
    actOnAsynchronousEvents();
    return 0;
}

// Deprecated, but still exported and used by old binaries (sysbench's threads test): glibc's calls
// the system call directly, which would yield the carrier instead of the user thread. Defined
// under its symbol name: glibc's header redirects the C name pthread_yield to sched_yield.
extern "C" ARBRUN_EXPORT int arbrunPthreadYield() __asm__("pthread_yield");
int arbrunPthreadYield() {
    return sched_yield();
}
