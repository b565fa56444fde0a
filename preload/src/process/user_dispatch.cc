// The program's syscall user dispatch (user_dispatch.h).
#include "process/user_dispatch.h"

#include <errno.h>  // program_invocation_name
#include <sys/prctl.h>

#include <atomic>

#include "libc/shim.h"
#include "sync/robust_list.h"

namespace arbrun {

long userDispatchCall(const long args[6]) {
    if (args[0] != PR_SET_SYSCALL_USER_DISPATCH || !onUserThread()) return kNotHandled;
    if (args[1] == PR_SYS_DISPATCH_OFF) return 0;
    static std::atomic<bool> said{false};
    if (!said.exchange(true, std::memory_order_relaxed)) {
        logWarning(
            "%s: prctl(PR_SET_SYSCALL_USER_DISPATCH) refused: arbrun uses syscall user dispatch "
            "on every kernel thread itself, and the kernel keeps one configuration per thread; "
            "run the program without arbrun to use it",
            program_invocation_name ? program_invocation_name : "the program");
    }
    return -EINVAL;
}

}  // namespace arbrun
