// The resume point of a user thread: where the program goes on when the interposed call the thread
// is in returns (that call's return address into the program). Threads parked at the same resume
// point are the same stage of different requests; cohort dispatch (RuntimeOptions::dispatch) runs
// such threads back to back for code and data locality (Larus & Parkes, USENIX ATC 2002).
//
// The embedding layer marks each interposed call that may park or block with
// ARBRT_RESUME_POINT() as its first statement. It costs two loads and two stores on the calling
// thread's own context (no call, no atomic), nothing on a kernel thread that is not a user thread.
#pragma once

namespace arbrt {

// Offsets the inline code below relies on; runtime/src/sched/context.h and arch.h check them.
inline constexpr long kResumeSlotOffset = 128;  // the TCB word naming the user thread's context
inline constexpr long kResumePointOffset = 96;  // ThreadContext::resumePoint

// Sets the calling user thread's resume point for the scope of one interposed call and puts the
// previous one back when the call returns (a signal handler run inside a wait may make interposed
// calls of its own; the wait then parks again at its own point). Written only by the thread
// itself, so plain stores: the dispatching core reads the word only while the thread is
// runnable, after the park or requeue that published it. A thread that leaves a marked call by
// longjmp keeps its point for the waits it makes outside marked calls: a grouping error at worst,
// never a correctness one (dispatch stays bounded whatever the points say).
class ResumePointScope {
  public:
    [[gnu::always_inline]] explicit ResumePointScope(void* returnAddress) {
        char* context;
        // %fs-relative: the TCB of whichever user thread runs here; 0 on other kernel threads.
        asm volatile("mov %%fs:(%1), %0" : "=r"(context) : "r"(kResumeSlotOffset));
        if (context) {
            slot_ = reinterpret_cast<void**>(context + kResumePointOffset);
            previous_ = *slot_;
            *slot_ = returnAddress;
        }
    }
    [[gnu::always_inline]] ~ResumePointScope() {
        if (slot_) *slot_ = previous_;
    }
    ResumePointScope(const ResumePointScope&) = delete;
    ResumePointScope& operator=(const ResumePointScope&) = delete;

  private:
    void** slot_ = nullptr;  // the thread's own context: it moves with the thread
    void* previous_ = nullptr;
};

}  // namespace arbrt

// First statement of an interposed entry point that may park: its caller's return address is the
// resume point. A macro so that __builtin_return_address(0) is the entry point's own.
#define ARBRT_RESUME_POINT() \
    ::arbrt::ResumePointScope arbrtResumePointScope_(__builtin_return_address(0))
