// Thread names and CPU affinity kept per user thread (identity.h).
#include "threads/identity.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdlib>
#include <cstring>

#include "arbrt/arbrt.h"
#include "arbrt/embed/threads.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "process/credentials.h"
#include "process/user_dispatch.h"
#include "sync/robust_list.h"
#include "threads/thread_state.h"
#include "threads/tid_address.h"

namespace arbrun {
namespace {

constexpr size_t kCommLen = 16;  // the kernel's TASK_COMM_LEN, NUL included

IdentityState* identityOf(arbrt::ThreadId thread) {
    ShimThreadState* s = shimStateOf(thread);
    return s ? &s->identity : nullptr;
}

// The per-thread lock: critical sections are a few copies; a waiter yields so that a holder on
// the same core (descheduled only at an interposed call, which it never makes inside) can finish.
void lockIdentity(IdentityState* s) {
    while (s->lock.exchange(1, std::memory_order_acquire) != 0) {
        while (s->lock.load(std::memory_order_relaxed) != 0) sched_yield();
    }
}

void unlockIdentity(IdentityState* s) {
    s->lock.store(0, std::memory_order_release);
}

// The process's name at start-up, read once from the kernel (prctl on the first caller's kernel
// thread, which still has it: the runtime never renames its kernel threads). Immutable afterwards.
const char* processName() {
    static const struct Name {
        char text[kCommLen] = {};
        Name() { ARBRUN_REAL(prctl)(PR_GET_NAME, text, 0, 0, 0); }
    } name;
    return name.text;
}

// The main thread's mask when first asked (before any user thread could have changed it: masks
// set on user threads never reach the kernel). Immutable afterwards.
const cpu_set_t& processMask() {
    static const struct Mask {
        cpu_set_t set;
        Mask() {
            CPU_ZERO(&set);
            if (ARBRUN_REAL(sched_getaffinity)(getpid(), sizeof set, &set) != 0) {
                for (int i = 0; i < CPU_SETSIZE; ++i) CPU_SET(i, &set);  // more CPUs than we keep
            }
        }
    } mask;
    return mask.set;
}

// Frees what a finished thread's identity allocated; the runtime calls it just before the context's
// extension storage is zeroed for its next thread.
void resetIdentity(void* extension) {
    std::free(static_cast<ShimThreadState*>(extension)->identity.affinity.load());
}

// A new mask block. Registers resetIdentity on first use (only threads with a mask need it).
cpu_set_t* newMask() {
    static const bool registered = (arbrt::setExtensionReset(resetIdentity), true);
    (void)registered;
    return static_cast<cpu_set_t*>(std::malloc(sizeof(cpu_set_t)));
}

// The usable part of a caller's mask of `size` bytes: its CPUs in the process's mask. EINVAL when
// there are none, as the kernel answers a mask without a usable CPU.
int usableMask(const cpu_set_t* given, size_t size, cpu_set_t* out) {
    if (!given) return EFAULT;
    CPU_ZERO(out);
    std::memcpy(out, given, size < sizeof *out ? size : sizeof *out);
    CPU_AND(out, out, &processMask());
    return CPU_COUNT(out) > 0 ? 0 : EINVAL;
}

// Records `mask` as the thread's. Allocates outside the lock (malloc may block).
int storeMask(IdentityState* s, const cpu_set_t& mask) {
    cpu_set_t* fresh = s->affinity.load(std::memory_order_relaxed) ? nullptr : newMask();
    lockIdentity(s);
    cpu_set_t* target = s->affinity.load(std::memory_order_relaxed);
    if (!target) {
        if (!fresh) {
            unlockIdentity(s);
            return ENOMEM;
        }
        target = fresh;
        fresh = nullptr;
        s->affinity.store(target, std::memory_order_relaxed);
    }
    *target = mask;
    unlockIdentity(s);
    std::free(fresh);  // another setter allocated first
    return 0;
}

int setAffinity(arbrt::ThreadId thread, size_t size, const cpu_set_t* given) {
    cpu_set_t mask;
    if (int err = usableMask(given, size, &mask)) return err;
    return storeMask(identityOf(thread), mask);
}

// Fills `out` (`size` bytes) with the thread's mask, after the kernel has validated `size` as it
// would for a native thread (at least its CPU count, a multiple of sizeof(long)).
int getAffinity(arbrt::ThreadId thread, size_t size, cpu_set_t* out) {
    const int saved = errno;
    if (ARBRUN_REAL(sched_getaffinity)(0, size, out) != 0) {
        const int err = errno;
        errno = saved;
        return err;
    }
    cpu_set_t mask;
    affinityOf(thread, &mask);
    std::memset(out, 0, size);
    std::memcpy(out, &mask, size < sizeof mask ? size : sizeof mask);
    return 0;
}

// Copies the thread's current name into `out` (kCommLen bytes).
void copyName(IdentityState* s, char* out) {
    lockIdentity(s);
    std::memcpy(out, s->nameSet.load(std::memory_order_relaxed) ? s->name : processName(),
                kCommLen);
    unlockIdentity(s);
}

void storeName(IdentityState* s, const char* name, size_t len) {
    lockIdentity(s);
    std::memcpy(s->name, name, len);
    s->name[len] = '\0';
    s->nameSet.store(true, std::memory_order_relaxed);
    unlockIdentity(s);
}

}  // namespace

const char* threadName(arbrt::ThreadId thread) {
    IdentityState* s = identityOf(thread);
    return s && s->nameSet.load(std::memory_order_relaxed) ? s->name : processName();
}

int newThreadMask(const pthread_attr_t* attr, cpu_set_t** out) {
    *out = nullptr;
    cpu_set_t mask;
    const cpu_set_t* source = nullptr;
    if (attr) {
        // glibc 2.36's struct pthread_attr keeps its extension (cpuset, cpusetsize, ...) at offset
        // 40; the public getter cannot tell "no mask" from "all CPUs".
        struct Extension {
            cpu_set_t* cpuset;
            size_t cpusetsize;
        };
        static_assert(sizeof(pthread_attr_t) == 56, "glibc 2.36 x86-64 pthread_attr_t");
        const Extension* ext;
        std::memcpy(&ext, reinterpret_cast<const char*>(attr) + 40, sizeof ext);
        if (ext && ext->cpuset) {
            if (int err = usableMask(ext->cpuset, ext->cpusetsize, &mask)) return err;
            source = &mask;
        }
    }
    IdentityState* creator = identityOf(arbrt::self());
    if (!source && creator && creator->affinity.load(std::memory_order_relaxed)) {
        lockIdentity(creator);
        mask = *creator->affinity.load(std::memory_order_relaxed);
        unlockIdentity(creator);
        source = &mask;
    }
    if (!source) return 0;  // the common case: no mask anywhere
    if (!(*out = newMask())) return EAGAIN;
    **out = *source;
    return 0;
}

void initIdentity(arbrt::ThreadId created, cpu_set_t* mask) {
    IdentityState* s = identityOf(created);
    s->affinity.store(mask, std::memory_order_relaxed);
    IdentityState* creator = identityOf(arbrt::self());
    if (!creator) return;
    // A racy read: a creator renamed by another thread while it creates may hand down either
    // name, as with a native clone. Most creators have no name of their own: then there is nothing
    // to copy.
    if (!creator->nameSet.load(std::memory_order_relaxed)) return;
    lockIdentity(creator);
    std::memcpy(s->name, creator->name, kCommLen);
    unlockIdentity(creator);
    s->nameSet.store(true, std::memory_order_relaxed);
}

void affinityOf(arbrt::ThreadId thread, cpu_set_t* out) {
    IdentityState* s = identityOf(thread);
    if (!s || !s->affinity.load(std::memory_order_relaxed)) {
        *out = processMask();
        return;
    }
    lockIdentity(s);
    *out = *s->affinity.load(std::memory_order_relaxed);
    unlockIdentity(s);
}

}  // namespace arbrun

using namespace arbrun;

ARBRUN_EXPORT int pthread_setname_np(pthread_t thread, const char* name) {
    const arbrt::ThreadId id = userThread(thread);
    if (!id) return ARBRUN_REAL(pthread_setname_np)(thread, name);
    const size_t len = std::strlen(name);
    if (len >= kCommLen) return ERANGE;
    storeName(identityOf(id), name, len);
    reclassifyOnName(id, name);  // name: rules (classes.h)
    return 0;
}

ARBRUN_EXPORT int pthread_getname_np(pthread_t thread, char* buf, size_t len) {
    const arbrt::ThreadId id = userThread(thread);
    if (!id) return ARBRUN_REAL(pthread_getname_np)(thread, buf, len);
    if (len < kCommLen) return ERANGE;  // glibc's check, whatever the name's length
    copyName(identityOf(id), buf);
    return 0;
}

// prctl passes four more arguments through (glibc's prctl reads four, whatever the option);
// options that set credential state go to every kernel thread (credentials.h), and
// PR_GET_TID_ADDRESS reads the user thread's own address (tid_address.h), and the program's own
// syscall user dispatch is refused (user_dispatch.h).
ARBRUN_EXPORT int prctl(int option, ...) {
    va_list ap;
    va_start(ap, option);
    const unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
    const unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
    va_end(ap);
    const long args[6] = {option, long(a2), long(a3), long(a4), long(a5), 0};
    long r;
    if (credentialCall(SYS_prctl, args, &r) ||  // credential state (credentials.h)
        (r = userTidAddressCall(SYS_prctl, args)) != kNotHandled ||  // tid_address.h
        (r = userDispatchCall(args)) != kNotHandled) {               // user_dispatch.h
        if (r >= 0) return int(r);
        errno = int(-r);
        return -1;
    }
    IdentityState* s =
        (option == PR_SET_NAME || option == PR_GET_NAME) ? identityOf(arbrt::self()) : nullptr;
    if (!s) return ARBRUN_REAL(prctl)(option, a2, a3, a4, a5);
    char* user = reinterpret_cast<char*>(a2);
    if (option == PR_GET_NAME) {
        copyName(s, user);
    } else {
        char name[kCommLen] = {};
        std::memcpy(name, user, strnlen(user, kCommLen - 1));  // the kernel truncates to 15
        storeName(s, name, std::strlen(name));
        reclassifyOnName(arbrt::self(), name);  // name: rules (classes.h)
    }
    return 0;
}

ARBRUN_EXPORT int pthread_setaffinity_np(pthread_t thread, size_t size, const cpu_set_t* set) {
    const arbrt::ThreadId id = userThread(thread);
    if (!id) return ARBRUN_REAL(pthread_setaffinity_np)(thread, size, set);
    return setAffinity(id, size, set);
}

ARBRUN_EXPORT int pthread_getaffinity_np(pthread_t thread, size_t size, cpu_set_t* set) {
    const arbrt::ThreadId id = userThread(thread);
    if (!id) return ARBRUN_REAL(pthread_getaffinity_np)(thread, size, set);
    return getAffinity(id, size, set);
}

ARBRUN_EXPORT int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t* set) {
    if (!isSelf(pid)) return ARBRUN_REAL(sched_setaffinity)(pid, size, set);
    if (int err = setAffinity(arbrt::self(), size, set)) {
        errno = err;
        return -1;
    }
    return 0;
}

ARBRUN_EXPORT int sched_getaffinity(pid_t pid, size_t size, cpu_set_t* set) {
    if (!isSelf(pid)) return ARBRUN_REAL(sched_getaffinity)(pid, size, set);
    if (int err = getAffinity(arbrt::self(), size, set)) {
        errno = err;
        return -1;
    }
    return 0;
}
