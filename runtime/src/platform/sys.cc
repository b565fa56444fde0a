// The interceptor slot of the runtime's system-call layer (sys.h).
#include "platform/sys.h"

namespace arbrt::detail {

std::atomic<SyscallInterceptor> gSyscallInterceptor{nullptr};

}  // namespace arbrt::detail
