// A user thread's identity as the kernel would keep it for a native thread: its name (comm) and its
// CPU affinity mask. Virtualised per user thread because the kernel only knows the carriers.
#pragma once

#include <sched.h>

#include <atomic>
#include <cstdint>

namespace arbrun {

// Lives in ShimThreadState (zeroed at creation: no name set, no mask set). Concurrency: `lock`
// guards `name`, `nameSet` and the mask `affinity` points to; any thread may take it (setname/
// setaffinity on another thread). `affinity` is allocated by whoever first sets a mask on the
// thread and freed only when the context is reused for another thread (the runtime's extension
// reset hook), when no valid handle to this thread exists any more.
struct IdentityState {
    std::atomic<uint8_t> lock;  // 0 free, 1 held; held for a few copies, never across a call
    // false: the thread has the default name (the process's). Written under `lock`; read without
    // it only as a hint (a thread with no name and no mask needs no lock to be copied).
    std::atomic<bool> nameSet;
    char name[16];                     // NUL-terminated, at most 15 characters (TASK_COMM_LEN)
    std::atomic<cpu_set_t*> affinity;  // null: the process's mask; same rules as nameSet
};
static_assert(sizeof(IdentityState) <= 64, "the identity state's share of the extension storage");

}  // namespace arbrun
