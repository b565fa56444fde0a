// The safety net for a blocking system call nobody caught (Go's sysmon "retake"): a call that the
// preload library does not interpose and syscall user dispatch does not trap (libc's internal
// calls, or any call on a kernel without dispatch) blocks its carrier in the kernel, and threads
// queued on that core wait until the call returns.
//
// The monitor notices a core whose runner has not switched for RuntimeOptions::retakeAfterNs while
// threads wait there, and whose carrier is not using its CPU (its thread CPU clock stood still
// since the last look). It then reads /proc/self/task/TID/syscall: if the carrier sleeps in a call
// that may be re-issued (retakeable(): the kernel restarts it after a handler, or it has no timeout
// that a second start would stretch), it records the call and sends the preemption signal with a
// retake request. The signal interrupts the call; the handler finds the thread either rewound onto
// its `syscall` instruction (the kernel's restart) or just after it with EINTR, and sends it into
// the system-call trampoline, which re-issues the same call, with the same registers, as a
// blocking call stamped as already overdue, and its carrier lends the core at once itself (to the
// owner waiting for it or an idle spare; else the monitor does: lendOwnCoreNow), and the thread
// rejoins a core when the call returns (blocking.cc), as for the interposed calls.
// A call that has returned meanwhile is left alone (the request is stale).
#pragma once

#include <cstdint>
#include <string_view>

namespace arbrt::detail {

struct Core;
struct Carrier;

// The preemption request bit that makes it a retake (preemptRequest = kRetakeRequest |
// (contextSwitches + 1)).
constexpr uint64_t kRetakeRequest = uint64_t{1} << 63;

// ThreadContext::preemptedPc while a retake sends the thread to re-issue its call (no code lives
// at address 1).
constexpr uint64_t kReissueBlocking = 1;

// Pure: one line of /proc/PID/task/TID/syscall. True, with the call's number, its six arguments
// and the address after its `syscall` instruction, when the thread sleeps in a system call; false
// for "running", "-1 ..." (blocked outside a call) and anything malformed.
bool parseSyscallFile(std::string_view text, long* number, long args[6], uintptr_t* resumePc);

// Pure: whether call `number` with `args` may be re-issued after a signal interrupted it: the
// kernel's own restart (ERESTARTSYS with SA_RESTART) would re-issue it anyway, or it has no
// timeout, so a second start waits exactly as the first would. Futex waits without a timeout,
// reads, writes, socket transfers, accept, wait4/waitid, flock, and poll/select/epoll waits
// without a timeout (event loops).
bool retakeable(long number, const long args[6]);

// The monitor's memory of one core for retakes (monitor-only).
struct RetakeWatch {
    uint64_t cpuNs = 0;                // the running carrier's CPU clock at the last look
    uint64_t wallNs = 0;               // when that was read (0: no look yet)
    const Carrier* carrier = nullptr;  // whose clock that was
};

// What tryRetake() found.
enum class RetakeLook {
    asked,      // the carrier sleeps in a retakeable call: a retake was requested
    computing,  // the carrier used its CPU since the last look
    asleep,     // it sleeps in a system call that cannot be re-issued (a signal would only
                // interrupt it: the caller should not preempt it either)
    other,      // asleep outside a system call, or its state unreadable
};

// Monitor: `core`'s runner has not switched since the switch count was `switches` and threads
// wait there. Asks for a retake if its carrier sleeps in a retakeable call. `preemptionDue`: the
// caller will preempt the runner unless told `asleep` or `asked`; a carrier that used its CPU
// since the last look may have entered a call since, so its state is read then too (else it is
// `computing` without a /proc read).
RetakeLook tryRetake(Core* core, uint64_t switches, RetakeWatch* watch, bool preemptionDue);

// Preemption handler (async-signal-safe): acts on a retake request for the thread `t` running
// `core`, interrupted with `ucontext`: sends it into the trampoline to re-issue the call, unless
// the call has returned meanwhile.
void redirectForRetake(Core* core, void* ucontext);

// In the trampoline, on the thread the handler redirected: re-issues the call as an overdue
// blocking call and returns the kernel's result.
long reissueAsBlockingCall(long number, const long args[6]);

// Calls re-issued so far (stats).
uint64_t retakeCount();

// Stop: closes the /proc files the monitor opened for `carriers`.
void closeRetakeFiles(Carrier* carriers, int count);

}  // namespace arbrt::detail
