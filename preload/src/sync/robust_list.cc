// Per-user-thread robust-list registration (robust_list.h).
#include "sync/robust_list.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "libc/pthread_fields.h"
#include "libc/shim.h"
#include "threads/thread_state.h"

namespace arbrun {
namespace {

long setList(RobustListState& state, long head, long length) {
    if (size_t(length) != sizeof(robust_list_head)) return -EINVAL;  // the kernel's only check
    state.head = reinterpret_cast<void*>(head);
    state.length = size_t(length);
    return 0;
}

long getList(const RobustListState& state, long pid, long headOut, long lengthOut) {
    if (pid != 0) return kNotHandled;
    void* head = state.head;
    size_t length = state.length;
    if (!head) {
        head = &pthread_field::at<char>(selfTcb(), pthread_field::kRobustHead);
        length = sizeof(robust_list_head);
    }
    // The kernel's put_user: EFAULT for a bad pointer would need a probe; programs pass their own
    // variables, and a null one is the usual mistake.
    if (!headOut || !lengthOut) return -EFAULT;
    *reinterpret_cast<void**>(headOut) = head;
    *reinterpret_cast<size_t*>(lengthOut) = length;
    return 0;
}

}  // namespace

long userRobustListCall(long number, const long args[6]) {
    ShimThreadState* self = selfShimState();
    if (!self) return kNotHandled;
    if (number == SYS_set_robust_list) return setList(self->robustList, args[0], args[1]);
    if (number == SYS_get_robust_list) return getList(self->robustList, args[0], args[1], args[2]);
    return kNotHandled;
}

}  // namespace arbrun
