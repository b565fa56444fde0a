// Per-user-thread glibc thread control blocks (TCB + static TLS), so errno, __thread, thread_local,
// malloc's per-thread cache and stdio lock ownership are per user thread, exactly as with native
// threads.
//
// Layout knowledge is for glibc 2.36 on x86-64 and is verified at start-up against the descriptors
// glibc exports for libthread_db (_thread_db_*) and the running thread's own TCB; anything
// unexpected makes probe() fail with a reason, and the runtime refuses to start rather than corrupt
// memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace arbrt::detail {

struct ThreadContext;
struct TcbBatch;

class GlibcTcb {
  public:
    // Checks the glibc version and layout and resolves the private entry points. Call once, from a
    // thread whose TCB glibc allocated (the thread calling start()). Returns false with *why set.
    static bool probe(std::string* why);

    // A fresh TCB with its own static TLS (images copied) and DTV. Null on allocation failure.
    // The TCB and its static TLS lie in a block of whole pages of this runtime's (tcb_blocks.h),
    // carved from `batch` when given, else mapped alone; glibc allocates only the DTV. From
    // malloc instead (glibc's own _dl_allocate_tls(NULL)), every fresh TCB grew the carrier's
    // malloc arena by an mprotect, whose write hold of the address-space lock stalled the other
    // carriers' page faults: a third of a fresh create's CPU time with two carriers creating and
    // refilling (perf, bench/many-threads).
    static void* allocate(TcbBatch* batch);
    // Frees the DTV and dynamic TLS (glibc), then unmaps the TCB's block.
    static void deallocate(void* tcb);

    // Fills the glibc fields of `tcb` for a user thread owning `context` and running on the stack
    // [stackLow, stackLow + stackSize) whose lowest `guardSize` bytes are the guard page.
    static void prepare(void* tcb, ThreadContext* context, void* stackLow, size_t stackSize,
                        size_t guardSize);
    // Whether `tcb` already holds what prepare() would write for these arguments: a pooled TCB
    // whose last occupant had the same context and stack and left its thread-list node and robust
    // list empty. Its other fields are the same for every thread (glibc's own values, the self
    // pointers, the tid), which no occupant changes, so prepare() can be skipped: its stores touch
    // six cache lines, which for a thread created on one core and run on another each cross twice
    // (about 150 of 1,150 ns on a 2-vCPU VM). Reads three lines.
    static bool preparedFor(const void* tcb, const ThreadContext* context, const void* stackLow,
                            size_t stackSize, size_t guardSize);
    // Restores a pooled TCB's static TLS to the TLS images (start-up modules and any loaded later)
    // for its next thread. libc's own block is
    // kept: it holds the malloc cache and arena that only glibc-internal functions could release
    // (resetting it would leak them); its user-visible parts (errno, locale) are reset by
    // resetLibcState() instead.
    static void resetForReuse(void* tcb);
    // Runs on the new thread (its TCB current): ctype tables for a fresh TCB; errno = 0 and the
    // global locale for a reused one (its libc block still holds the previous thread's values);
    // static TLS of libraries loaded since its TCB was initialised.
    static void resetLibcState(bool reused);

    // Static TLS of libraries loaded after start-up (dlopen of initial-exec TLS): glibc initialises
    // it only in the threads it knows. Rescans the loaded modules; each one new since the last scan
    // whose TLS lies in the static block gets its image copied (bss zeroed) into every user TCB
    // (live, starting, pooled); unloaded ones are forgotten. Call after dlopen/dlmopen/dlclose.
    // Each TCB carries the generation of the module list it holds (a header word glibc leaves
    // unused), updated by CAS, so a TCB is initialised once per new module even when a thread
    // starts while a scan runs. Limitation: a module constructor's writes to its own initial-exec
    // TLS in the thread that called dlopen are overwritten by the image (we copy after dlopen).
    static void refreshStaticTls();
    // Fork: the lock refreshStaticTls() holds (taken before the context pool's).
    static void lockStaticTls();
    static void unlockStaticTls();
    // Runs the thread's C++ thread_local destructors; on the exiting thread, its TCB current.
    static void runTlsDestructors();
    // Fork child: glibc's thread list holds the forking thread's TCB (THREAD_SELF at fork, a user
    // TCB when a user thread forked), but the kernel thread it stands for, the child's only one,
    // continues on `kernelTcb`. Puts `kernelTcb` in `userTcb`'s place in that list, with the
    // kernel thread's tid, so that glibc's set*id broadcast signals that kernel thread and finds
    // the flag its SIGSETXID handler clears on THREAD_SELF. `userTcb` keeps its tid (the owner id
    // of mutexes its thread holds). The caller must be the only thread that can touch the list.
    static void moveThreadListEntry(void* userTcb, void* kernelTcb, int32_t kernelTid);
    // Where glibc keeps a thread's unique id (never a real tid: >= 0x400000 > PID_MAX_LIMIT).
    static int32_t userThreadId(void* tcb);
};

}  // namespace arbrt::detail
