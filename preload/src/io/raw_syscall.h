// The preload library's raw system calls are the runtime's (arbrt/embed/raw_syscall.h): no errno,
// none of this library's interposed functions, never trapped by syscall user dispatch.
#pragma once

#include "arbrt/embed/raw_syscall.h"

namespace arbrun {

using arbrt::rawSyscall;

}  // namespace arbrun
