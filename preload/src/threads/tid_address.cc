// Per-user-thread clear-child-tid address (tid_address.h).
#include "threads/tid_address.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include <atomic>

#include "io/raw_syscall.h"
#include "libc/pthread_fields.h"
#include "libc/shim.h"
#include "sync/futex.h"
#include "sync/robust_list.h"
#include "threads/thread_state.h"

namespace arbrun {
namespace {

int* currentAddress(const TidAddressState& state) {
    if (state.set) return state.address;
    return &pthread_field::at<int>(selfTcb(), pthread_field::kTid);
}

// The kernel's own call first, on the carrier, with the program's pointer: it fails as natively
// (EINVAL where the kernel lacks PR_GET_TID_ADDRESS, EFAULT for a bad pointer) and otherwise
// writes the carrier's address, which the user thread's then replaces.
long getAddress(const TidAddressState& state, long out) {
    const long r = rawSyscall(SYS_prctl, PR_GET_TID_ADDRESS, out, 0, 0, 0);
    if (r != 0) return r;
    *reinterpret_cast<int**>(out) = currentAddress(state);
    return 0;
}

}  // namespace

long userTidAddressCall(long number, const long args[6]) {
    if (number != SYS_set_tid_address && (number != SYS_prctl || args[0] != PR_GET_TID_ADDRESS)) {
        return kNotHandled;
    }
    ShimThreadState* self = selfShimState();
    if (!self) return kNotHandled;
    if (number == SYS_prctl) return getAddress(self->tidAddress, args[1]);
    self->tidAddress.address = reinterpret_cast<int*>(args[0]);
    self->tidAddress.set = 1;
    return rawSyscall(SYS_gettid);
}

void clearChildTidAtExit() {
    ShimThreadState* self = selfShimState();
    if (!self || !self->tidAddress.set || !self->tidAddress.address) return;
    int* word = self->tidAddress.address;
    // The kernel skips a word it cannot write (freed memory, say); so does the kernel's own copy
    // into this process, where a plain store would crash. A copy refused outright (a seccomp
    // filter) leaves the plain store.
    const int zero = 0;
    iovec from{const_cast<int*>(&zero), sizeof zero}, to{word, sizeof zero};
    const long copied =
        rawSyscall(SYS_process_vm_writev, rawSyscall(SYS_getpid), long(&from), 1, long(&to), 1, 0);
    if (copied == -EFAULT) return;
    if (copied != long(sizeof zero)) std::atomic_ref(*word).store(0, std::memory_order_release);
    // Through the futex emulation: waiters of this process park there (futex.cc), and a word in
    // memory shared with another process also gets the kernel's wake.
    long args[6] = {reinterpret_cast<long>(word), FUTEX_WAKE, 1, 0, 0, 0};
    long woken;
    emulateFutex(args, &woken);
}

}  // namespace arbrun
