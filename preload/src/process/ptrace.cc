// ptrace(2) in a process that runs under the runtime. The kernel ties a trace to kernel threads:
// the tracee of PTRACE_TRACEME is the thread that asked, and every later request must come from the
// thread that attached. Under the runtime a program's thread runs on whichever carrier its core
// has, so a tracer's requests would come from changing kernel threads, and a child asking to be
// traced would make a carrier the tracee while its tracer waits for the process: strace hung there.
// Until the runtime can keep a thread on one kernel thread, the requests that start a trace fail
// with EPERM (what a kernel that forbids tracing says) and one line says why and what to do
// instead, whether the request comes through libc's ptrace or as a system call of its own
// (rawPtraceCall). Tracing a program under arbrun from outside (`strace -f arbrun -- PROGRAM`)
// works.
#include <errno.h>  // program_invocation_name
#include <stdarg.h>
#include <sys/ptrace.h>
#include <sys/types.h>

#include <atomic>

#include "libc/real_libc.h"
#include "libc/shim.h"
#include "process/ptrace.h"
#include "sync/robust_list.h"

namespace arbrun {
namespace {

// The requests that make a thread a tracer or a tracee.
const char* traceStart(int request) {
    switch (request) {
        case PTRACE_TRACEME:
            return "PTRACE_TRACEME";
        case PTRACE_ATTACH:
            return "PTRACE_ATTACH";
        case PTRACE_SEIZE:
            return "PTRACE_SEIZE";
        default:
            return nullptr;
    }
}

// Once: a tracer retries, and a child it forked before asking inherits the flag, so a tracer and
// its children say it once together (strace: one line).
void reportRefusal(const char* request) {
    static std::atomic<bool> said{false};
    if (said.exchange(true, std::memory_order_relaxed)) return;
    logWarning(
        "%s: ptrace(%s) refused: the kernel ties a trace to one kernel thread, and under "
        "arbrun a program's threads move between kernel threads; run the tracer without "
        "arbrun (it can trace a program that runs under arbrun: strace -f arbrun -- PROGRAM)",
        program_invocation_name ? program_invocation_name : "the program", request);
}

}  // namespace

long rawPtraceCall(const long args[6]) {
    const char* start = traceStart(int(args[0]));
    if (!start || ensureStarted() != Mode::runtime) return kNotHandled;
    reportRefusal(start);
    return -EPERM;
}

}  // namespace arbrun

using namespace arbrun;

// glibc's ptrace reads three more arguments whatever the request; so do we.
ARBRUN_EXPORT long ptrace(enum __ptrace_request request, ...) {
    va_list ap;
    va_start(ap, request);
    const pid_t pid = va_arg(ap, pid_t);
    void* addr = va_arg(ap, void*);
    void* data = va_arg(ap, void*);
    va_end(ap);
    if (const char* start = traceStart(request); start && ensureStarted() == Mode::runtime) {
        reportRefusal(start);
        errno = EPERM;
        return -1;
    }
    return ARBRUN_REAL(ptrace)(request, pid, addr, data);
}
