// Robust mutexes (PTHREAD_MUTEX_ROBUST, process-private) in the shim.
//
// glibc's robust mutexes rely on the kernel: the owner's kernel tid in the lock word and the
// kernel's per-thread robust list, walked when a kernel thread exits. User threads have no kernel
// thread of their own (fake tids, and they exit without the kernel noticing), so private robust
// mutexes are implemented here over the shared mutex word (arbrt/sync_words.h) and the parking lot,
// with the object's glibc fields:
//   __lock        the mutex word: 0 free, 1 locked, 2 locked with waiters, kOwnerDied free after
//                 its owner died
//   __owner       selfId() of the holder; __count: recursion depth
//   __spins       flags: kInconsistent (held after EOWNERDEAD, consistent() not called yet),
//                 kNotRecoverable (unlocked while inconsistent: every later lock fails)
//   __list        links of the holder's list of robust mutexes (thread_local head, so per user
//                 thread); written only by the holder
// A thread that ends holding some (return, pthread_exit, cancellation) releases each with the
// lock word kOwnerDied, from a thread_local destructor: it runs before the thread's pthread key
// destructors (glibc marks them when the kernel thread exits, after those; a key destructor that
// unlocks a robust mutex its thread still holds gets EPERM here).
// Process-shared robust mutexes still go to glibc (see mutex.cc for what that means).
#pragma once

#include <pthread.h>

#include <cstdint>

namespace arbrun {

constexpr int kRobustFlag = 16;  // glibc's PTHREAD_MUTEX_ROBUST_NORMAL_NP bit in __kind

// The robust counterparts of mutex.cc's typed lock/unlock: 0, EOWNERDEAD (locked; the protected
// state may be inconsistent), ENOTRECOVERABLE, EBUSY (tryOnly), EDEADLK, EAGAIN, ETIMEDOUT; unlock:
// 0 or EPERM.
int robustLock(pthread_mutex_t* m, int kind, uint64_t deadlineNs, bool tryOnly);
int robustUnlock(pthread_mutex_t* m, int kind);

}  // namespace arbrun
