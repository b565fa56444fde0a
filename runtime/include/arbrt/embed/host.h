// Embedding the runtime in an interposition library: the kernel-thread calls the runtime itself
// must make (its carriers) have to reach the real libc, not the library's own pthread_create.
#pragma once

#include <pthread.h>

namespace arbrt {

struct HostThreadApi {
    int (*create)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*) = nullptr;
    int (*join)(pthread_t, void**) = nullptr;
};

// Call before start(). Null members keep the default (the pthread functions the runtime links to).
void setHostThreadApi(const HostThreadApi& api);

// Takes the first sample of start()'s TSC calibration now, so that the embedding layer's own work
// before start() (its configuration, its signal handlers) counts toward the calibration's span
// instead of a sleep inside start(). Optional: without it start() takes the sample itself. Call at
// most once, before start(), from the thread that will call start().
void beginClockCalibration();

// With RuntimeOptions::coreZeroAwaitsCaller: the calling kernel thread (not a user thread) becomes
// core 0's carrier. prepare(arg) runs first, with the core claimed; it creates what the carrier
// will run (main() as a user thread) and says whether it could. The carrier then runs until the
// last user thread exits, which ends the process with status 0 as glibc's last thread does (main()
// returning ends it with main's status, through exit()). Returns false, without running prepare
// when core 0 already has its carrier (a thread was created earlier: wait for main() as before),
// and after it when prepare failed (core 0's carrier thread is then started as usual).
bool runCallerAsCoreZero(bool (*prepare)(void*), void* arg);

// Blocks the calling kernel thread (not a user thread) until no user thread is alive. Used when a
// program's main thread exits with pthread_exit: the process lives on until its last thread ends.
void waitUntilNoThreads();

// Runs fn(arg) with the thread pointer (%fs base) at the calling kernel thread's own glibc TCB and
// restores it afterwards. On a carrier running a user thread, glibc's THREAD_SELF is the user
// thread's TCB, which glibc's thread list does not hold; code that must appear to glibc as the
// kernel thread it knows (its SIGSETXID handler, the set*id broadcast) runs through this. Elsewhere
// it just calls fn(arg). Async-signal-safe. While fn runs, errno and every __thread variable are
// the kernel thread's, not the user thread's: fn must not switch or park user threads.
void runOnKernelThreadTcb(void (*fn)(void*), void* arg);

}  // namespace arbrt
