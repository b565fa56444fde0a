// Thread attributes: what pthread_create honours from a pthread_attr_t (and from the defaults set
// with pthread_setattr_default_np), and what pthread_getattr_np reports for a user thread.
#pragma once

#include <pthread.h>

#include "arbrt/thread.h"

namespace arbrun {

// Reads detach state, stack (size, or the caller's own memory) and guard size from `attr`; a null
// `attr` means the process's defaults. Returns 0 or EINVAL.
int readAttributes(const pthread_attr_t* attr, arbrt::ThreadAttributes* out);

// What `attr` asks of a new thread's scheduling, with glibc's flags (the public getters cannot
// tell a policy or priority set from the defaults). A null `attr` asks for nothing.
struct ScheduleRequest {
    bool explicitSched = false;  // PTHREAD_EXPLICIT_SCHED
    bool policySet = false;      // pthread_attr_setschedpolicy was called
    bool paramSet = false;       // pthread_attr_setschedparam was called
    int policy = 0;
    int priority = 0;
};
void readScheduleRequest(const pthread_attr_t* attr, ScheduleRequest* out);

}  // namespace arbrun
