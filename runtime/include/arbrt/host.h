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

// Blocks the calling kernel thread (not a user thread) until no user thread is alive. Used when a
// program's main thread exits with pthread_exit: the process lives on until its last thread ends.
void waitUntilNoThreads();

}  // namespace arbrt
