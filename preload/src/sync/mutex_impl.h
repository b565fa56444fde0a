// The mutex operations other primitives need (condition variables re-lock through them).
#pragma once

#include <pthread.h>

#include <cstdint>

namespace arbrun {

// True for mutexes handled by the real libc (process-shared ones).
bool mutexPassesThrough(const pthread_mutex_t* m);
// Lock with an absolute deadline on the runtime's timeline (~0: none): 0, EINVAL, EDEADLK, EAGAIN,
// ETIMEDOUT; robust ones also EOWNERDEAD and ENOTRECOVERABLE.
int mutexLock(pthread_mutex_t* m, uint64_t deadlineNs);
int mutexUnlock(pthread_mutex_t* m);

}  // namespace arbrun
