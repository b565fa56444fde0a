// Scheduling policies and priorities per user thread (schedule.h).
#include "threads/schedule.h"

#include <errno.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "arbrt/arbrt.h"
#include "arbrt/embed/threads.h"
#include "io/raw_syscall.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "sync/robust_list.h"
#include "threads/attr.h"
#include "threads/thread_state.h"

namespace arbrun {
namespace {

constexpr uint64_t kExplicitBit = uint64_t{1} << 40;
// The policy argument of sched_setparam and pthread_setschedprio, which keep the policy (the
// kernel's SETPARAM_POLICY; a policy a program passes is an int, so this is out of its range).
constexpr long kKeepPolicy = -1L << 40;
constexpr int kMaxRtPriority = 99;

constexpr int kNiceShift = 48;  // bits 48-55: the nice value, two's complement (zero: nice 0)

uint64_t pack(const ScheduleSettings& s) {
    return uint64_t(uint32_t(s.policy)) | (uint64_t(uint8_t(s.priority)) << 32) |
           (s.explicitSched ? kExplicitBit : 0) | (uint64_t(uint8_t(int8_t(s.nice))) << kNiceShift);
}

ScheduleSettings unpack(uint64_t word) {
    ScheduleSettings s;
    s.policy = int(uint32_t(word));
    s.priority = int(uint8_t(word >> 32));
    s.explicitSched = word & kExplicitBit;
    s.nice = int(int8_t(uint8_t(word >> kNiceShift)));
    return s;
}

ScheduleState* stateOf(arbrt::ThreadId thread) {
    ShimThreadState* s = shimStateOf(thread);
    return s ? &s->schedule : nullptr;
}

int basePolicy(int policy) {
    return policy & ~SCHED_RESET_ON_FORK;
}

bool realtime(int policy) {
    return basePolicy(policy) == SCHED_FIFO || basePolicy(policy) == SCHED_RR;
}

// What the runtime orders run queues by: the priority of a SCHED_FIFO/RR thread, else none.
int runtimePriorityOf(const ScheduleSettings& s) {
    return realtime(s.policy) ? s.priority : 0;
}

// CAP_SYS_NICE in the caller's effective set (capget: credentials may change at any time, and
// this is never on a hot path).
bool hasCapSysNice() {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    if (rawSyscall(SYS_capget, reinterpret_cast<long>(&header), reinterpret_cast<long>(data)) != 0)
        return false;
    return data[CAP_SYS_NICE / 32].effective & (1u << (CAP_SYS_NICE % 32));
}

// The soft limit of `resource` (0 when it cannot be read).
uint64_t softLimit(int resource) {
    rlimit limit;
    if (rawSyscall(SYS_getrlimit, resource, reinterpret_cast<long>(&limit)) != 0) return 0;
    return limit.rlim_cur;
}

// Whether RLIMIT_NICE lets a thread have nice value `nice` (the kernel's can_nice(), without the
// capability: what it asks before a thread lowers its nice value, or leaves SCHED_IDLE, which
// counts as nice 20).
bool niceAllowed(int nice) {
    return uint64_t(20 - nice) <= softLimit(RLIMIT_NICE);
}

// Whether a thread at nice value `from` may move to `to`: raising it always, lowering it within
// RLIMIT_NICE or with CAP_SYS_NICE (setpriority answers EACCES otherwise, sched_setattr EPERM).
bool niceChangeAllowed(int from, int to) {
    return to >= from || niceAllowed(to) || hasCapSysNice();
}

// The checks of the kernel's sched_setscheduler/sched_setparam (kernel/sched/core.c), in its
// order, for a thread whose settings are `current`; `policy` is kKeepPolicy for sched_setparam.
// On success `next` holds what glibc then records.
int checkChange(const ScheduleSettings& current, long policy, int priority,
                ScheduleSettings* next) {
    const int currentBase = basePolicy(current.policy);
    const bool currentReset = current.policy & SCHED_RESET_ON_FORK;
    *next = current;
    int base = currentBase;
    bool reset = currentReset;
    if (policy != kKeepPolicy) {
        if (policy < 0) return EINVAL;
        base = basePolicy(int(policy));
        reset = policy & SCHED_RESET_ON_FORK;
        if (base != SCHED_OTHER && base != SCHED_FIFO && base != SCHED_RR && base != SCHED_BATCH &&
            base != SCHED_IDLE && base != SCHED_DEADLINE) {
            return EINVAL;
        }
        next->policy = int(policy);
    }
    if (unsigned(priority) > unsigned(kMaxRtPriority)) return EINVAL;
    if (base == SCHED_DEADLINE) return EINVAL;  // needs sched_setattr's runtime and deadline
    if (realtime(base) != (priority != 0)) return EINVAL;
    if (!hasCapSysNice()) {
        if (realtime(base)) {
            const uint64_t limit = softLimit(RLIMIT_RTPRIO);
            if (base != currentBase && limit == 0) return EPERM;
            if (priority > current.priority && uint64_t(priority) > limit) return EPERM;
        }
        if (currentBase == SCHED_IDLE && base != SCHED_IDLE && !niceAllowed(current.nice)) {
            return EPERM;
        }
        if (currentReset && !reset) return EPERM;
    }
    next->priority = priority;
    return 0;
}

// Applies a validated change to a live thread's record (CAS: racing setters each validate against
// what they replace), then its runtime priority. Returns 0, EINVAL, EPERM or ESRCH.
int change(arbrt::ThreadId thread, long policy, int priority) {
    ScheduleState* state = stateOf(thread);
    if (!state || arbrt::threadPriority(thread) < 0) return ESRCH;  // glibc: its tid is gone
    uint64_t word = state->word.load(std::memory_order_acquire);
    ScheduleSettings next;
    do {
        if (int err = checkChange(unpack(word), policy, priority, &next)) return err;
    } while (!state->word.compare_exchange_weak(word, pack(next), std::memory_order_acq_rel));
    return arbrt::setThreadPriority(thread, runtimePriorityOf(next));
}

// The calling thread's settings: a user thread's record, or what the kernel says of a kernel
// thread (the starting thread creating main(): the process's own, e.g. under chrt).
ScheduleSettings callerSettings() {
    if (ScheduleState* self = stateOf(arbrt::self())) {
        return unpack(self->word.load(std::memory_order_acquire));
    }
    ScheduleSettings s;
    const long policy = rawSyscall(SYS_sched_getscheduler, 0);
    sched_param param{};
    if (policy >= 0 && rawSyscall(SYS_sched_getparam, 0, reinterpret_cast<long>(&param)) == 0) {
        s.policy = int(policy);
        s.priority = param.sched_priority;
    }
    const long raw = rawSyscall(SYS_getpriority, PRIO_PROCESS, 0);  // 20 - nice, or -errno
    if (raw > 0) s.nice = int(20 - raw);
    return s;
}

// errno convention of the sched_* wrappers.
int failWith(int err) {
    if (err == 0) return 0;
    errno = err;
    return -1;
}

}  // namespace

int newThreadSchedule(const pthread_attr_t* attr, ScheduleSettings* out, int* runtimePriority) {
    const ScheduleSettings creator = callerSettings();
    ScheduleRequest request;
    readScheduleRequest(attr, &request);
    *out = creator;
    out->explicitSched = request.explicitSched;
    if (request.explicitSched && (request.policySet || request.paramSet)) {
        // glibc sets the new kernel thread's policy and priority after clone, which gave it its
        // creator's (reset to SCHED_OTHER by SCHED_RESET_ON_FORK); pthread_create returns what
        // the kernel refused.
        ScheduleSettings cloned = creator;
        if (creator.policy & SCHED_RESET_ON_FORK) cloned = ScheduleSettings{.nice = creator.nice};
        const int policy = request.policySet ? request.policy : creator.policy;
        const int priority = request.paramSet ? request.priority : creator.priority;
        ScheduleSettings next;
        if (int err = checkChange(cloned, policy, priority, &next)) return err;
        out->policy = next.policy;
        out->priority = next.priority;
    }
    if ((creator.policy & SCHED_RESET_ON_FORK) && out->nice < 0) out->nice = 0;  // the kernel's
    *runtimePriority = runtimePriorityOf(*out);
    return 0;
}

void initSchedule(arbrt::ThreadId created, const ScheduleSettings& settings) {
    stateOf(created)->word.store(pack(settings), std::memory_order_relaxed);  // launch publishes
}

long priorityCall(long number, const long args[6]) {
    const int which = int(args[0]);
    if (which != PRIO_PROCESS || !isSelf(pid_t(args[1]))) return kNotHandled;
    ScheduleState* state = stateOf(arbrt::self());
    if (!state) return kNotHandled;
    uint64_t word = state->word.load(std::memory_order_acquire);
    if (number == SYS_getpriority) return 20 - unpack(word).nice;
    const int nice = int(std::clamp<long>(args[2], -20, 19));  // the kernel clamps
    for (;;) {
        ScheduleSettings next = unpack(word);
        if (!niceChangeAllowed(next.nice, nice)) return -EACCES;
        next.nice = nice;
        if (state->word.compare_exchange_weak(word, pack(next), std::memory_order_acq_rel))
            return 0;
    }
}

namespace {

// The kernel's struct sched_attr (include/uapi/linux/sched/types.h, which clashes with glibc's
// struct sched_param and so is not included): size 48 without the utilisation clamps, 56 with.
struct sched_attr {
    uint32_t size;
    uint32_t sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime, sched_deadline, sched_period;
    uint32_t sched_util_min, sched_util_max;
};
constexpr uint32_t SCHED_ATTR_SIZE_VER0 = 48;
static_assert(sizeof(sched_attr) == 56, "the kernel's struct sched_attr, version 1");

// sched_setattr(0, attr, flags) on the calling user thread, as kernel/sched/core.c checks it.
long setAttr(ScheduleState* state, const sched_attr* user, unsigned long flags) {
    if (flags != 0 || !user) return -EINVAL;
    sched_attr attr{};
    uint32_t size = user->size;
    if (size == 0) size = SCHED_ATTR_SIZE_VER0;
    if (size < SCHED_ATTR_SIZE_VER0 || size > 4096) return -E2BIG;
    std::memcpy(&attr, user, std::min<size_t>(size, sizeof attr));
    if (int32_t(attr.sched_policy) < 0 || (attr.sched_flags & ~uint64_t(SCHED_FLAG_ALL)))
        return -EINVAL;
    const bool keepPolicy = attr.sched_flags & SCHED_FLAG_KEEP_POLICY;
    const bool keepParams = attr.sched_flags & SCHED_FLAG_KEEP_PARAMS;
    // A deadline reservation is the kernel's, for a kernel thread: a user thread has none to get.
    if (!keepPolicy && attr.sched_policy == SCHED_DEADLINE) return -EPERM;
    uint64_t word = state->word.load(std::memory_order_acquire);
    ScheduleSettings next;
    for (;;) {
        const ScheduleSettings current = unpack(word);
        long policy = keepPolicy ? kKeepPolicy : long(attr.sched_policy);
        if (!keepPolicy && (attr.sched_flags & SCHED_FLAG_RESET_ON_FORK))
            policy |= SCHED_RESET_ON_FORK;
        const int priority = keepParams ? current.priority : int(attr.sched_priority);
        if (int err = checkChange(current, policy, priority, &next)) return -err;
        if (!keepParams && !realtime(next.policy)) {
            const int nice = std::clamp(int(attr.sched_nice), -20, 19);
            if (!niceChangeAllowed(current.nice, nice)) return -EPERM;
            next.nice = nice;
        }
        if (state->word.compare_exchange_weak(word, pack(next), std::memory_order_acq_rel)) break;
    }
    return -arbrt::setThreadPriority(arbrt::self(), runtimePriorityOf(next));
}

// sched_getattr(0, attr, size, flags) on the calling user thread: the first `size` bytes of what
// the kernel would report (no deadline parameters; utilisation clamps at their defaults).
long getAttr(const ScheduleState* state, sched_attr* user, uint32_t size, unsigned long flags) {
    if (flags != 0 || !user || size < SCHED_ATTR_SIZE_VER0 || size > 4096) return -EINVAL;
    const ScheduleSettings s = unpack(state->word.load(std::memory_order_acquire));
    sched_attr attr{};
    attr.size = uint32_t(std::min<size_t>(size, sizeof attr));
    attr.sched_policy = uint32_t(basePolicy(s.policy));
    attr.sched_flags = (s.policy & SCHED_RESET_ON_FORK) ? SCHED_FLAG_RESET_ON_FORK : 0;
    attr.sched_nice = s.nice;
    attr.sched_priority = uint32_t(runtimePriorityOf(s));
    attr.sched_util_max = 1024;  // SCHED_CAPACITY_SCALE: no clamp
    std::memcpy(user, &attr, attr.size);
    return 0;
}

}  // namespace

long schedAttrCall(long number, const long args[6]) {
    if (!isSelf(pid_t(args[0]))) return args[0] < 0 ? -EINVAL : kNotHandled;
    ScheduleState* state = stateOf(arbrt::self());
    if (!state) return kNotHandled;
    if (number == SYS_sched_setattr)
        return setAttr(state, reinterpret_cast<const sched_attr*>(args[1]), unsigned(args[2]));
    return getAttr(state, reinterpret_cast<sched_attr*>(args[1]), uint32_t(args[2]),
                   unsigned(args[3]));
}

bool scheduleOf(arbrt::ThreadId thread, ScheduleSettings* out) {
    ScheduleState* state = stateOf(thread);
    if (!state) return false;
    *out = unpack(state->word.load(std::memory_order_acquire));
    return true;
}

}  // namespace arbrun

using namespace arbrun;

ARBRUN_EXPORT int pthread_getschedparam(pthread_t thread, int* policy, sched_param* param) {
    const arbrt::ThreadId id = userThread(thread);
    if (!id) return ARBRUN_REAL(pthread_getschedparam)(thread, policy, param);
    ScheduleSettings s;
    if (arbrt::threadPriority(id) < 0 || !scheduleOf(id, &s)) return ESRCH;
    *policy = s.policy;
    param->sched_priority = s.priority;
    return 0;
}

ARBRUN_EXPORT int pthread_setschedparam(pthread_t thread, int policy, const sched_param* param) {
    const arbrt::ThreadId id = userThread(thread);
    if (!id) return ARBRUN_REAL(pthread_setschedparam)(thread, policy, param);
    return change(id, policy, param->sched_priority);
}

ARBRUN_EXPORT int pthread_setschedprio(pthread_t thread, int priority) {
    const arbrt::ThreadId id = userThread(thread);
    if (!id) return ARBRUN_REAL(pthread_setschedprio)(thread, priority);
    return change(id, kKeepPolicy, priority);
}

ARBRUN_EXPORT int sched_setscheduler(pid_t pid, int policy, const sched_param* param) {
    if (!isSelf(pid)) return ARBRUN_REAL(sched_setscheduler)(pid, policy, param);
    if (!param || policy < 0) return failWith(EINVAL);
    return failWith(change(arbrt::self(), policy, param->sched_priority));
}

ARBRUN_EXPORT int sched_setparam(pid_t pid, const sched_param* param) {
    if (!isSelf(pid)) return ARBRUN_REAL(sched_setparam)(pid, param);
    if (!param) return failWith(EINVAL);
    return failWith(change(arbrt::self(), kKeepPolicy, param->sched_priority));
}

ARBRUN_EXPORT int sched_getscheduler(pid_t pid) {
    if (!isSelf(pid)) return ARBRUN_REAL(sched_getscheduler)(pid);
    ScheduleSettings s;
    scheduleOf(arbrt::self(), &s);
    return s.policy;  // the kernel's answer includes SCHED_RESET_ON_FORK too
}

ARBRUN_EXPORT int setpriority(__priority_which_t which, id_t who, int prio) {
    const long args[6] = {long(which), long(who), prio, 0, 0, 0};
    const long r = priorityCall(SYS_setpriority, args);
    if (r == kNotHandled) return ARBRUN_REAL(setpriority)(which, who, prio);
    return failWith(int(-r));
}

// glibc's getpriority turns the kernel's 20 - nice into the nice value; errno stays as it was on
// success (callers clear it to tell a nice of -1 from a failure).
ARBRUN_EXPORT int getpriority(__priority_which_t which, id_t who) {
    const long args[6] = {long(which), long(who), 0, 0, 0, 0};
    const long r = priorityCall(SYS_getpriority, args);
    if (r == kNotHandled) return ARBRUN_REAL(getpriority)(which, who);
    return int(20 - r);
}

// glibc's nice() calls its internal getpriority/setpriority, which no interposition reaches: the
// same steps on the record. EPERM (not setpriority's EACCES) when the kernel would refuse.
ARBRUN_EXPORT int nice(int increment) {
    const long get[6] = {PRIO_PROCESS, 0, 0, 0, 0, 0};
    const long raw = priorityCall(SYS_getpriority, get);
    if (raw == kNotHandled) return ARBRUN_REAL(nice)(increment);
    const long current = 20 - raw;
    const long target = std::clamp<long>(current + increment, -20, 19);
    const long set[6] = {PRIO_PROCESS, 0, target, 0, 0, 0};
    if (const long r = priorityCall(SYS_setpriority, set); r < 0) {
        errno = r == -EACCES ? EPERM : int(-r);
        return -1;
    }
    return int(target);
}

ARBRUN_EXPORT int sched_getparam(pid_t pid, sched_param* param) {
    if (!isSelf(pid)) return ARBRUN_REAL(sched_getparam)(pid, param);
    if (!param) return failWith(EINVAL);
    ScheduleSettings s;
    scheduleOf(arbrt::self(), &s);
    param->sched_priority = runtimePriorityOf(s);  // the kernel reports 0 for the other policies
    return 0;
}
