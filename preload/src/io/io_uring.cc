// io_uring under the runtime. A user thread runs on whichever carrier its core has, so the kernel
// thread that makes its io_uring_enter calls changes; a ring must not be tied to one of them:
// - IORING_SETUP_SINGLE_ISSUER makes the kernel refuse submissions from any task but the ring's
//   creator (EEXIST), and IORING_SETUP_DEFER_TASKRUN (which needs it) runs completions only when
//   that task waits for them: fio's io_uring jobs stopped after a few I/Os once their thread moved;
// - IORING_SETUP_COOP_TASKRUN (and IORING_SETUP_TASKRUN_FLAG, which needs it or DEFER_TASKRUN)
//   queues a completion's task work on the submitting kernel thread without waking it; a carrier
//   asleep in the runtime (or running other threads) would hold back a completion its user thread
//   waits for on another carrier. Without it the kernel wakes the submitter to post the completion.
// io_uring_setup is made without these flags; the parameters the program reads back keep the flags
// it asked for (they are hints for it: liburing only enters the kernel more often). Registered
// ring descriptors (IORING_REGISTER_RING_FDS) belong to the registering task too: refused with
// EINVAL, as by a kernel without them, so liburing and programs use the plain descriptor.
#include "io/io_uring.h"

#include <errno.h>
#include <linux/io_uring.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdint>

#include "arbrt/io.h"
#include "io/raw_syscall.h"
#include "libc/shim.h"

namespace arbrun {
namespace {

constexpr uint32_t kTaskBoundFlags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
                                     IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
constexpr long kRegisterRingFds = 20;  // IORING_REGISTER_RING_FDS (Linux 5.18)

// Copies between the program's memory and ours without faulting on a bad pointer (where the
// kernel would answer EFAULT): process_vm_readv/writev on this process. Returns success.
bool copyUser(void* ours, void* theirs, size_t size, bool read) {
    iovec local{ours, size}, remote{theirs, size};
    const long n =
        rawSyscall(read ? SYS_process_vm_readv : SYS_process_vm_writev, rawSyscall(SYS_getpid),
                   reinterpret_cast<long>(&local), 1, reinterpret_cast<long>(&remote), 1, 0);
    return n == long(size);
}

// io_uring_setup(entries, params) without the task-bound flags (see the top).
long setup(const long a[6]) {
    auto* params = reinterpret_cast<io_uring_params*>(a[1]);
    uint32_t asked;
    const bool readable = copyUser(&asked, &params->flags, sizeof asked, true);
    if (readable && (asked & kTaskBoundFlags)) {
        uint32_t plain = asked & ~kTaskBoundFlags;
        if (copyUser(&plain, &params->flags, sizeof plain, false)) {
            const long fd = rawSyscall(SYS_io_uring_setup, a[0], a[1]);
            copyUser(&asked, &params->flags, sizeof asked, false);
            return fd;
        }
    }
    return rawSyscall(SYS_io_uring_setup, a[0], a[1]);
}

}  // namespace

bool ioUringCall(long nr, const long a[6], long* result) {
    if (nr != SYS_io_uring_setup && !(nr == SYS_io_uring_register && a[1] == kRegisterRingFds))
        return false;
    if (ensureStarted() != Mode::runtime || !onUserThread()) return false;
    if (nr == SYS_io_uring_register) {
        *result = -EINVAL;
        return true;
    }
    arbrt::BlockingCall blocking;  // setting up a ring allocates and may sleep
    *result = setup(a);
    return true;
}

}  // namespace arbrun
