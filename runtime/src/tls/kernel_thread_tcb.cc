// runOnKernelThreadTcb (arbrt/embed/host.h): the kernel thread's own glibc identity for a moment.
#include "arbrt/embed/host.h"
#include "platform/arch.h"
#include "sched/runtime_state.h"

namespace arbrt {

using namespace detail;

// Reads only TCB words and the running thread's context, and switches %fs with wrfsbase or a raw
// arch_prctl: safe in a signal handler that interrupted a carrier anywhere, including inside a
// switch (the incoming thread's `carrier` is written before %fs points at its TCB, so the user
// TCB that %fs names always belongs to a thread running on this kernel thread).
void runOnKernelThreadTcb(void (*fn)(void*), void* arg) {
    ThreadContext* t = currentContext();
    if (!t || !t->carrier) {
        fn(arg);  // a kernel thread's own TCB (a dispatcher, or not a carrier at all)
        return;
    }
    void* userTcb = threadPointer();
    setThreadPointer(t->carrier->nativeTcb);
    fn(arg);
    setThreadPointer(userTcb);
}

}  // namespace arbrt
