// Reporting user-thread stack overflows: a fault in a thread's guard page prints one clear line and
// then ends the process with SIGSEGV as before; every other fault goes to the handler that was
// installed before.
#pragma once

#include <cstddef>

namespace arbrt::detail {

// Installs the SIGSEGV handler once per process (idempotent).
void installOverflowHandler();

// An alternate signal stack for the calling kernel thread (the handler must not run on the stack
// that just overflowed). Owned by each carrier for its lifetime.
class AltStack {
  public:
    AltStack();
    ~AltStack();
    AltStack(const AltStack&) = delete;
    AltStack& operator=(const AltStack&) = delete;

  private:
    void* memory_ = nullptr;
    size_t size_ = 0;
};

}  // namespace arbrt::detail
