// io_uring rings under the runtime (io_uring.cc): the ring features that tie a ring to one kernel
// thread are left out, since a user thread moves between carriers.
#pragma once

namespace arbrun {

// If nr(a[0..5]) is io_uring_setup or io_uring_register from a user thread under the runtime, makes
// it as io_uring.cc describes, stores the kernel's result (-errno on failure) in *result and
// returns true; otherwise returns false and the caller makes the call as it is. For syscall() and
// the SIGSYS dispatcher (liburing and fio issue these calls themselves).
bool ioUringCall(long nr, const long a[6], long* result);

}  // namespace arbrun
