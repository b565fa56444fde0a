// Thread attributes: what pthread_create honours from a pthread_attr_t (and from the defaults set
// with pthread_setattr_default_np), and what pthread_getattr_np reports for a user thread.
#pragma once

#include <pthread.h>

#include "arbrt/thread.h"

namespace arbrun {

// Reads detach state, stack (size, or the caller's own memory) and guard size from `attr`; a null
// `attr` means the process's defaults. Returns 0 or EINVAL.
int readAttributes(const pthread_attr_t* attr, arbrt::ThreadAttributes* out);

}  // namespace arbrun
