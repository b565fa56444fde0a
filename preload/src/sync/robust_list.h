// set_robust_list/get_robust_list made by a user thread (through syscall() or a raw system call).
// The kernel keeps one robust-list head per kernel thread, which here is the carrier's: a user
// thread that registered its own head there (a list on its stack, say) would leave it to every
// later user thread of that carrier, which reads it back after the first thread's stack is gone
// (stress-ng's pthread stressor copies the head it gets back: a crash). So the registration is
// kept per user thread: glibc's at first (the head in the thread's TCB, as glibc registers it at
// thread start), what set_robust_list stored afterwards. get_robust_list of another thread (a
// kernel thread id) goes to the kernel. The kernel never walks a user thread's list: the runtime
// implements process-private robust mutexes itself (robust.h; the limitation for process-shared
// ones is documented in mutex.cc).
#pragma once

#include <cstddef>

namespace arbrun {

// Per user thread (ShimThreadState::robustList). All-zero: glibc's head in the thread's TCB.
// Written and read only by the thread itself.
struct RobustListState {
    void* head;
    size_t length;
};

// For a user thread: set_robust_list(args[0], args[1]) or get_robust_list(args[0], args[1],
// args[2]) as the kernel would answer for it; returns the raw result (-errno on failure), or
// kNotHandled when the call is for another thread and must go to the kernel.
constexpr long kNotHandled = 1L << 62;
long userRobustListCall(long number, const long args[6]);

}  // namespace arbrun
