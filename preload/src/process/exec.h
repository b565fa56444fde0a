// How programs are started from user threads (exec.cc has the rules).
#pragma once

#include <errno.h>

#include <cstdint>

#include "libc/shim.h"
#include "signals/signals.h"

namespace arbrun {

// While it lives, the carrier's real signal mask is the calling user thread's virtual one, so that
// a program started now (exec, or a spawn that returns once the child exists, as popen's) inherits
// the thread's mask; nothing on a kernel thread, whose mask is real already. Only around calls that
// return without waiting: the thread cannot move to another carrier meanwhile. Keeps errno.
class ExecMask {
  public:
    ExecMask() : active_(onUserThread()) {
        if (active_) saved_ = swapRealMaskForExec(currentSignalMask());
    }
    ~ExecMask() {
        if (!active_) return;
        const int savedErrno = errno;
        swapRealMaskForExec(saved_);
        errno = savedErrno;
    }
    ExecMask(const ExecMask&) = delete;
    ExecMask& operator=(const ExecMask&) = delete;

  private:
    bool active_;
    uint64_t saved_ = 0;
};

}  // namespace arbrun
