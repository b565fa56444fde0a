// The fields of glibc's struct pthread (2.36, x86-64) this library reads or writes in a user
// thread's TCB, in one place. The runtime checks its own copy of the layout against the running
// glibc (_thread_db_* descriptors) before any user thread exists, and refuses to start otherwise
// (runtime/src/tls/glibc_layout.h), so these hold wherever a user thread runs.
#pragma once

#include <cstddef>

namespace arbrun::pthread_field {

constexpr size_t kTid = 720;             // the kernel's clear-child-tid word (glibc: pd->tid)
constexpr size_t kRobustHead = 736;      // the robust-list head glibc registers at thread start
constexpr size_t kCleanup = 760;         // pthread_cleanup_push's chain
constexpr size_t kCleanupJmpBuf = 768;   // where pthread_exit and cancellation unwind to
constexpr size_t kCancelHandling = 776;  // cancellation state bits (pthread_testcancel: 0x308)
constexpr size_t kResult = 1576;         // the value pthread_exit stored

// The field of type T at `offset` in the TCB `tcb` (a pthread_t).
template <typename T>
T& at(void* tcb, size_t offset) {
    return *reinterpret_cast<T*>(static_cast<char*>(tcb) + offset);
}

}  // namespace arbrun::pthread_field
