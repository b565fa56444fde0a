// State shared by the interposed functions: whether the runtime runs, and who the caller is.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <ctime>

#include "arbrt/embed/threads.h"
#include "arbrt/thread.h"

namespace arbrun {

enum class Mode : int {
    undecided,  // before the first interposed call or the library constructor
    runtime,    // threads are user threads on the arbrt runtime
    native,     // the runtime could not start: everything passes through to libc
};

// Decides the mode once (reads the configuration, starts the runtime); safe to call from any
// interposed function, including re-entrantly while starting (returns `undecided` then).
Mode ensureStarted();

inline bool runtimeMode() {
    return ensureStarted() == Mode::runtime;
}

// True on a user thread: its TCB carries the runtime's context pointer.
inline bool onUserThread() {
    return bool(arbrt::self());
}

// The caller's thread id as glibc keeps it in the TCB (the kernel tid for kernel threads, a unique
// id >= 0x400000 for user threads): owner field of mutexes, one load.
inline int32_t selfId() {
    int32_t id;
    asm volatile("movl %%fs:720, %0" : "=r"(id));
    return id;
}

// The calling thread's TCB (glibc's THREAD_SELF, what pthread_self() returns: %fs:0x10), one load
// and no call into libc, whose text a signal handler counts as the program's.
inline void* selfTcb() {
    void* tcb;
    asm volatile("movq %%fs:0x10, %0" : "=r"(tcb));
    return tcb;
}

// pid (of a sched_*/prctl-style call) names the calling user thread: 0, or its own thread id.
inline bool isSelf(pid_t pid) {
    return onUserThread() && (pid == 0 || pid == selfId());
}

// The live user thread a pthread_t names (pthread_t is its TCB address), or a null handle for a
// kernel thread's, an exited one's or garbage.
inline arbrt::ThreadId userThread(pthread_t thread) {
    return arbrt::embed::threadFromTcb(reinterpret_cast<const void*>(thread));
}

// Every kernel thread of this library (the runtime's carriers, monitor and spares, the signal
// helper) is made here, with the real pthread_create, on a thread glibc lists. glibc's first
// thread creation installs its SIGSETXID handler and makes every stream lock; this library's
// threads are created on demand, not all at start-up, so after each one the handler is wrapped
// (setxid.h) and streams are made lock-free again while the program has one thread
// (stdio_locks.h). The new thread is registered (below) before its mask lets a signal in.
// Returns 0 or an errno value.
int createKernelThread(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                       void* arg);

// Whether the calling kernel thread is one of those, or the program's first thread once it became
// core 0's carrier or waits for main()'s user thread (false on a user thread, and on kernel
// threads the program makes itself).
bool onLibraryKernelThread();
// Calls fn(tid) for each of them (async-signal-safe; a thread made or ended meanwhile may be
// missed or seen).
void forEachLibraryKernelThread(void (*fn)(int tid));
// In a fork child, on the forking thread (a carrier, the only thread left): it is the only one.
void resetLibraryKernelThreadsAfterFork();

// Whether cores come from a core arbiter (decided at start-up; false before).
bool coresFromArbiter();

struct NewThreadClass;  // classes.h
// Creates a user thread that runs start(arg) the way pthread_create does (pthread_exit and
// cancellation unwind to its entry frame), with the class `threadClass` when not null (classes.h).
// Returns 0 or an errno value.
int createUserThread(const arbrt::ThreadAttributes& attributes, void* (*start)(void*), void* arg,
                     pthread_t* thread, const NewThreadClass* threadClass = nullptr);

// The clocks a timed wait can use (those the runtime's timeline converts from).
inline bool supportedClock(clockid_t clock) {
    return clock == CLOCK_MONOTONIC || clock == CLOCK_REALTIME;
}

// Validates a deadline's clock (first, as glibc does: EINVAL even when the object is free) and
// timespec (EINVAL for tv_nsec outside [0, 1e9)), and converts it to the runtime's timeline.
// Returns 0 or EINVAL.
int deadlineFrom(clockid_t clock, const timespec* abstime, uint64_t* deadlineNs);

// Verbose diagnostics (ARBRUN_VERBOSE): one line to stderr, prefixed "arbrun: ".
void logVerbose(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// A warning: one line to stderr, prefixed "arbrun: ", always.
void logWarning(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// A line the user asked for (--explain-classes): as logWarning, but not a complaint.
void logAlways(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace arbrun

#define ARBRUN_EXPORT extern "C" __attribute__((visibility("default")))
