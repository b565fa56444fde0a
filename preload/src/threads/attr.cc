// Thread attributes (attr.h). The attribute objects themselves are glibc's (pthread_attr_* are not
// interposed); creation honours them, and pthread_getattr_np describes a user thread from the
// runtime's own record of its stack, since glibc's version asks the kernel about the thread's
// (fake) tid for its affinity and fails.
#include "threads/attr.h"

#include <errno.h>
#include <pthread.h>

#include <atomic>
#include <cstring>

#include "arbrt/arbrt.h"
#include "arbrt/embed/threads.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "threads/identity.h"
#include "threads/schedule.h"

namespace arbrun {
namespace {

// glibc 2.36 x86-64 struct pthread_attr (checked by the runtime's layout probe of the same glibc):
// the public getters cannot tell whether a stack address was set.
struct GlibcAttr {
    int schedPriority;
    int schedPolicy;
    int flags;
    size_t guardSize;
    void* stackAddr;  // the stack's top (it grows down)
    size_t stackSize;
    void* extension;
    void* unused;
};
static_assert(sizeof(GlibcAttr) == sizeof(pthread_attr_t), "glibc 2.36 x86-64 pthread_attr_t");
constexpr int kFlagDetached = 0x1, kFlagNotInheritSched = 0x2, kFlagStackAddr = 0x8;
constexpr int kFlagSchedSet = 0x20, kFlagPolicySet = 0x40;

// The defaults a program set with pthread_setattr_default_np, for threads created without
// attributes (0: none set, the runtime's default stack and one guard page). Written by that call,
// read by every such pthread_create: relaxed, each value stands alone.
std::atomic<size_t> gDefaultStackSize{0};
std::atomic<size_t> gDefaultGuardSize{arbrt::kDefaultGuard};

}  // namespace

int readAttributes(const pthread_attr_t* attr, arbrt::ThreadAttributes* out) {
    if (!attr) {
        out->stackSize = gDefaultStackSize.load(std::memory_order_relaxed);
        out->guardSize = gDefaultGuardSize.load(std::memory_order_relaxed);
        return 0;
    }
    GlibcAttr a;
    std::memcpy(&a, attr, sizeof a);
    out->detached = a.flags & kFlagDetached;
    // stacksize 0 means glibc's default, which pthread_attr_getstacksize reports (it includes what
    // pthread_setattr_default_np set).
    size_t stackSize = a.stackSize;
    if (!stackSize && pthread_attr_getstacksize(attr, &stackSize) != 0) return EINVAL;
    out->stackSize = stackSize;
    if (a.flags & kFlagStackAddr) {
        out->stackAddr = static_cast<char*>(a.stackAddr) - stackSize;  // no guard, as glibc
    } else {
        out->guardSize = a.guardSize;
    }
    return 0;
}

void readScheduleRequest(const pthread_attr_t* attr, ScheduleRequest* out) {
    *out = ScheduleRequest{};
    if (!attr) return;
    GlibcAttr a;
    std::memcpy(&a, attr, sizeof a);
    out->explicitSched = a.flags & kFlagNotInheritSched;
    out->policySet = a.flags & kFlagPolicySet;
    out->paramSet = a.flags & kFlagSchedSet;
    out->policy = a.schedPolicy;
    out->priority = a.schedPriority;
}

namespace {
// Writes a thread's scheduling into an attribute object as glibc's pthread_getattr_np copies it
// from the descriptor: raw fields, since the setters refuse SCHED_BATCH, SCHED_IDLE and
// SCHED_RESET_ON_FORK, which a thread may have.
void writeSchedule(pthread_attr_t* attr, const ScheduleSettings& s) {
    GlibcAttr a;
    std::memcpy(&a, attr, sizeof a);
    a.schedPolicy = s.policy;
    a.schedPriority = s.priority;
    a.flags |= kFlagSchedSet | kFlagPolicySet | (s.explicitSched ? kFlagNotInheritSched : 0);
    std::memcpy(attr, &a, sizeof a);
}
}  // namespace

}  // namespace arbrun

using namespace arbrun;

ARBRUN_EXPORT int pthread_getattr_np(pthread_t thread, pthread_attr_t* attr) {
    const arbrt::ThreadId id = userThread(thread);
    if (!id) return ARBRUN_REAL(pthread_getattr_np)(thread, attr);
    arbrt::StackBounds stack;
    if (!arbrt::threadStack(id, &stack)) return ESRCH;
    if (int err = pthread_attr_init(attr)) return err;
    // As glibc reports a thread: its stack above the guard, the guard, its current detach state and
    // its affinity.
    pthread_attr_setstack(attr, static_cast<char*>(stack.low) + stack.guard,
                          stack.size - stack.guard);
    pthread_attr_setguardsize(attr, stack.guard);
    if (arbrt::isDetached(id)) pthread_attr_setdetachstate(attr, PTHREAD_CREATE_DETACHED);
    ScheduleSettings schedule;
    if (scheduleOf(id, &schedule)) writeSchedule(attr, schedule);
    cpu_set_t mask;
    affinityOf(id, &mask);
    if (int err = pthread_attr_setaffinity_np(attr, sizeof mask, &mask)) {
        pthread_attr_destroy(attr);
        return err;
    }
    return 0;
}

ARBRUN_EXPORT int pthread_setattr_default_np(const pthread_attr_t* attr) {
    const int err = ARBRUN_REAL(pthread_setattr_default_np)(attr);
    if (err) return err;
    // Keep what glibc now holds (it validated, and it keeps the old stack size for 0).
    pthread_attr_t now;
    if (pthread_getattr_default_np(&now) != 0) return 0;
    size_t stackSize = 0, guardSize = 0;
    pthread_attr_getstacksize(&now, &stackSize);
    pthread_attr_getguardsize(&now, &guardSize);
    pthread_attr_destroy(&now);
    gDefaultStackSize.store(stackSize, std::memory_order_relaxed);
    gDefaultGuardSize.store(guardSize, std::memory_order_relaxed);
    return 0;
}
