// C11 <threads.h> on top of the interposed pthread functions. glibc implements thrd_*, mtx_*,
// cnd_*, tss_* and call_once with its internal __pthread_* aliases, which no interposer sees:
// thrd_create would start a kernel thread, mtx_lock and cnd_wait would block the carrier on a
// kernel futex (and misread our condvar layout), thrd_yield makes a raw system call. Each entry
// point here calls the public pthread function instead, so it reaches this library's version.
// The C11 objects are the pthread ones (glibc: mtx_t is a pthread_mutex_t, cnd_t a pthread_cond_t,
// tss_t a pthread_key_t, once_flag a pthread_once_t, thrd_t a pthread_t), so nothing is stored
// beyond them. thrd_current and thrd_equal stay glibc's: thrd_t is the TCB address either way.
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <threads.h>

#include <cstdint>
#include <cstdlib>

#include "arbrt/embed/resume_point.h"
#include "libc/shim.h"

namespace arbrun {
namespace {

static_assert(sizeof(mtx_t) == sizeof(pthread_mutex_t) && sizeof(cnd_t) == sizeof(pthread_cond_t));
static_assert(sizeof(tss_t) == sizeof(pthread_key_t) && sizeof(thrd_t) == sizeof(pthread_t));
static_assert(sizeof(once_flag) == sizeof(pthread_once_t));

// An errno value as a C11 result, with glibc's mapping (everything unlisted is thrd_error).
int toC11(int err) {
    switch (err) {
        case 0:
            return thrd_success;
        case ENOMEM:
            return thrd_nomem;
        case ETIMEDOUT:
            return thrd_timedout;
        case EBUSY:
            return thrd_busy;
        default:
            return thrd_error;
    }
}

pthread_mutex_t* asMutex(mtx_t* m) {
    return reinterpret_cast<pthread_mutex_t*>(m);
}
pthread_cond_t* asCond(cnd_t* c) {
    return reinterpret_cast<pthread_cond_t*>(c);
}

// What a C11 thread runs: the int-returning start routine and its argument. Heap-allocated by
// thrd_create, freed by the new thread before it calls the routine.
struct C11Start {
    thrd_start_t func;
    void* arg;
};

// The pthread start routine of every C11 thread: the int result travels as a pointer-sized value
// (thrd_join truncates it back, as glibc's does).
void* runC11Thread(void* raw) {
    const C11Start start = *static_cast<C11Start*>(raw);
    std::free(raw);
    return reinterpret_cast<void*>(intptr_t(start.func(start.arg)));
}

}  // namespace
}  // namespace arbrun

using namespace arbrun;

ARBRUN_EXPORT int thrd_create(thrd_t* thr, thrd_start_t func, void* arg) {
    auto* start = static_cast<C11Start*>(std::malloc(sizeof(C11Start)));
    if (!start) return thrd_nomem;
    *start = C11Start{func, arg};
    const int err = pthread_create(thr, nullptr, runC11Thread, start);
    if (err) std::free(start);
    return toC11(err);
}

ARBRUN_EXPORT int thrd_join(thrd_t thr, int* res) {
    ARBRT_RESUME_POINT();
    void* result = nullptr;
    const int err = pthread_join(thr, &result);
    if (err == 0 && res) *res = int(reinterpret_cast<intptr_t>(result));
    return toC11(err);
}

ARBRUN_EXPORT int thrd_detach(thrd_t thr) {
    return toC11(pthread_detach(thr));
}

ARBRUN_EXPORT void thrd_exit(int res) {
    pthread_exit(reinterpret_cast<void*>(intptr_t(res)));
}

ARBRUN_EXPORT void thrd_yield() {
    sched_yield();
}

// glibc's mapping of the kinds: recursive if asked for, otherwise a normal mutex (timed or not:
// every pthread mutex supports timed locks).
ARBRUN_EXPORT int mtx_init(mtx_t* m, int type) {
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    if (type == (mtx_plain | mtx_recursive) || type == (mtx_timed | mtx_recursive)) {
        pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    } else {
        pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_NORMAL);
    }
    const int err = pthread_mutex_init(asMutex(m), &attr);
    pthread_mutexattr_destroy(&attr);
    return toC11(err);
}

ARBRUN_EXPORT int mtx_lock(mtx_t* m) {
    ARBRT_RESUME_POINT();
    return toC11(pthread_mutex_lock(asMutex(m)));
}

ARBRUN_EXPORT int mtx_trylock(mtx_t* m) {
    return toC11(pthread_mutex_trylock(asMutex(m)));
}

ARBRUN_EXPORT int mtx_timedlock(mtx_t* __restrict m, const timespec* __restrict abstime) {
    ARBRT_RESUME_POINT();
    return toC11(pthread_mutex_timedlock(asMutex(m), abstime));
}

ARBRUN_EXPORT int mtx_unlock(mtx_t* m) {
    return toC11(pthread_mutex_unlock(asMutex(m)));
}

ARBRUN_EXPORT void mtx_destroy(mtx_t* m) {
    pthread_mutex_destroy(asMutex(m));
}

ARBRUN_EXPORT int cnd_init(cnd_t* c) {
    return toC11(pthread_cond_init(asCond(c), nullptr));
}

ARBRUN_EXPORT int cnd_signal(cnd_t* c) {
    return toC11(pthread_cond_signal(asCond(c)));
}

ARBRUN_EXPORT int cnd_broadcast(cnd_t* c) {
    return toC11(pthread_cond_broadcast(asCond(c)));
}

ARBRUN_EXPORT int cnd_wait(cnd_t* c, mtx_t* m) {
    ARBRT_RESUME_POINT();
    return toC11(pthread_cond_wait(asCond(c), asMutex(m)));
}

ARBRUN_EXPORT int cnd_timedwait(cnd_t* __restrict c, mtx_t* __restrict m,
                                const timespec* __restrict abstime) {
    ARBRT_RESUME_POINT();
    return toC11(pthread_cond_timedwait(asCond(c), asMutex(m), abstime));
}

ARBRUN_EXPORT void cnd_destroy(cnd_t* c) {
    pthread_cond_destroy(asCond(c));
}

ARBRUN_EXPORT int tss_create(tss_t* key, tss_dtor_t destructor) {
    return toC11(pthread_key_create(key, destructor));
}

ARBRUN_EXPORT void* tss_get(tss_t key) {
    return pthread_getspecific(key);
}

ARBRUN_EXPORT int tss_set(tss_t key, void* value) {
    return toC11(pthread_setspecific(key, value));
}

ARBRUN_EXPORT void tss_delete(tss_t key) {
    pthread_key_delete(key);
}

ARBRUN_EXPORT void call_once(once_flag* flag, void (*func)()) {
    pthread_once(reinterpret_cast<pthread_once_t*>(flag), func);
}
