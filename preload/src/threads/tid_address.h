// set_tid_address and prctl(PR_GET_TID_ADDRESS) made by a user thread (through syscall(), prctl()
// or a raw system call). The kernel keeps one clear-child-tid address per kernel thread, which
// here is the carrier's: a user thread that set it there would move it off the carrier's own TCB
// (glibc's pthread_join of that carrier, at the runtime's shutdown, would then wait forever), or,
// moved to another carrier between two calls, hand one carrier's address to another (stress-ng's
// pthread stressor reads it, clears it and sets it back). So the address is kept per user thread:
// glibc's at first (the tid word of the thread's TCB, as glibc registers it at thread start),
// what set_tid_address stored afterwards. When a user thread ends, an address the program set
// gets what the kernel would give it: a 0 stored and one waiter woken.
#pragma once

#include <cstdint>

namespace arbrun {

// Per user thread (ShimThreadState::tidAddress). All-zero: glibc's word in the thread's TCB.
// Written and read only by the thread itself.
struct TidAddressState {
    int* address;  // what set_tid_address stored (may be null), when `set`
    uint32_t set;  // non-zero once the program called set_tid_address
};

// For a user thread: set_tid_address(args[0]) or prctl(PR_GET_TID_ADDRESS, args[1]) as the kernel
// would answer for it; returns the raw result (-errno on failure), or kNotHandled (robust_list.h)
// for any other call, or when not on a user thread. set_tid_address returns the caller's tid,
// which is its carrier's (as gettid's).
long userTidAddressCall(long number, const long args[6]);

// At the end of a user thread (its last step on its own stack): if the program set an address, a
// 0 is stored there and one futex waiter on it woken, as the kernel does when a thread exits.
void clearChildTidAtExit();

}  // namespace arbrun
