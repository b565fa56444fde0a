// Per-user-thread names and CPU affinity (see identity_state.h for what is kept): the pthread,
// prctl and sched_* calls that name or pin a thread act on that record and never rename or pin a
// carrier.
//
// Choices, where a native thread's behaviour cannot be copied exactly:
// - A new thread inherits its creator's name and mask, as a cloned kernel thread does; a thread
//   whose creator never set one has the process's name (the program's comm at start-up) and mask.
// - prctl(PR_SET_NAME/PR_GET_NAME) on a user thread acts on its own name, like
//   pthread_setname_np(pthread_self()); /proc/self/task/<tid>/comm shows carriers only.
// - Masks are recorded, never applied: the runtime places threads on its cores. A mask is valid
//   when it has a CPU of the process's mask at start-up (EINVAL otherwise, as the kernel says for
//   a mask with no usable CPU); what is recorded and read back is that intersection.
// - Scheduling policies and priorities are kept per user thread too: schedule.h.
// - sched_setaffinity/sched_getaffinity act on the calling user thread for pid 0 and for its own
//   glibc thread id; any other pid goes to the kernel.
#pragma once

#include <pthread.h>
#include <sched.h>

#include "arbrt/thread.h"

namespace arbrun {

// The thread's current name (its own, or the process's by default). The pointer stays valid while
// the thread lives; a concurrent rename may be seen half-written.
const char* threadName(arbrt::ThreadId thread);

// Before a thread is created: the mask it will own, a heap copy of the one `attr` asks for
// (pthread_attr_setaffinity_np; a null `attr` asks for none) or else of its creator's; null when
// neither has one. Returns 0, EINVAL (the attribute's mask has no usable CPU) or EAGAIN.
int newThreadMask(const pthread_attr_t* attr, cpu_set_t** mask);
// On the creating thread, before `created` can run: gives it its creator's name and `mask`
// (from newThreadMask; ownership passes to the thread, which frees it when its context is reused).
void initIdentity(arbrt::ThreadId created, cpu_set_t* mask);

// The thread's mask (the process's when none was set), for pthread_getattr_np.
void affinityOf(arbrt::ThreadId thread, cpu_set_t* out);

}  // namespace arbrun
