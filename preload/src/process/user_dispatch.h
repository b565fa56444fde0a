// prctl(PR_SET_SYSCALL_USER_DISPATCH) made by the program. The runtime turns syscall user
// dispatch on for every carrier itself (runtime/src/monitor/syscall_dispatch.h: that is how it sees
// the program's raw system calls), and the kernel keeps one configuration per kernel thread: a
// program's own would replace the runtime's on one carrier, and the first system call outside
// the program's allowed range would then kill the process with SIGSYS (stress-ng's usersyscall
// did). So turning it on fails with EINVAL (what a kernel without the feature says) and one line
// says why; turning it off succeeds and changes nothing, since the program's is never on.
#pragma once

namespace arbrun {

// For prctl and its raw form on a user thread: the result (0, or -EINVAL with the line said once)
// when args[0] is PR_SET_SYSCALL_USER_DISPATCH, else kNotHandled (robust_list.h).
long userDispatchCall(const long args[6]);

}  // namespace arbrun
