// Retake (rules in retake.h): the monitor's look at a carrier asleep in the kernel, the request,
// and the re-issue of the call as a blocking call.
#include "monitor/retake.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <ucontext.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>

#include "arbrt/io.h"
#include "arbrt/time.h"
#include "monitor/syscall_dispatch.h"
#include "platform/arch.h"
#include "sched/preempt.h"
#include "sched/runtime_state.h"
#include "tls/glibc_tcb.h"

namespace arbrt::detail {
namespace {

std::atomic<uint64_t> gRetakes{0};

// Reads one whitespace-separated number (decimal, or hex with 0x) from `text` at `*pos`.
bool readNumber(std::string_view text, size_t* pos, long* out) {
    while (*pos < text.size() && text[*pos] == ' ') ++*pos;
    const char* begin = text.data() + *pos;
    const char* end = text.data() + text.size();
    int base = 10;
    bool negative = false;
    if (begin < end && *begin == '-') {
        negative = true;
        ++begin;
    }
    if (end - begin > 2 && begin[0] == '0' && begin[1] == 'x') {
        base = 16;
        begin += 2;
    }
    unsigned long value = 0;
    const auto [next, ec] = std::from_chars(begin, end, value, base);
    if (ec != std::errc() || next == begin) return false;
    *pos = size_t(next - text.data());
    *out = negative ? -long(value) : long(value);
    return true;
}

// A thread's CPU clock (the kernel's MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)).
clockid_t threadCpuClock(int tid) {
    return clockid_t((~unsigned(tid) << 3) | 6u);
}

// The /proc file of carrier `c` (kernel thread `tid`), opened on first use (monitor-only).
int syscallFile(Carrier* c, int tid) {
    if (c->syscallFileFd >= 0) return c->syscallFileFd;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    const long fd =
        rawSyscall(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path), O_RDONLY | O_CLOEXEC);
    c->syscallFileFd = fd >= 0 ? int(fd) : -1;
    return c->syscallFileFd;
}

}  // namespace

bool parseSyscallFile(std::string_view text, long* number, long args[6], uintptr_t* resumePc) {
    size_t pos = 0;
    if (!readNumber(text, &pos, number) || *number < 0) return false;  // "running", "-1 sp pc"
    for (int i = 0; i < 6; ++i) {
        if (!readNumber(text, &pos, &args[i])) return false;
    }
    long sp, pc;
    if (!readNumber(text, &pos, &sp) || !readNumber(text, &pos, &pc)) return false;
    *resumePc = uintptr_t(pc);
    return pc != 0;
}

bool retakeable(long number, const long args[6]) {
    switch (number) {
        case SYS_futex: {
            const long cmd = args[1] & FUTEX_CMD_MASK;
            return (cmd == FUTEX_WAIT || cmd == FUTEX_WAIT_BITSET) && args[3] == 0;
        }
        case SYS_recvmmsg:
            return args[4] == 0;  // no timeout
        // Readiness waits without a timeout (event loops): -1 ms, or no timespec/timeval.
        case SYS_poll:
        case SYS_epoll_wait:
        case SYS_epoll_pwait:
            return int(args[number == SYS_poll ? 2 : 3]) < 0;
        case SYS_ppoll:
            return args[2] == 0;
        case SYS_select:
        case SYS_pselect6:
            return args[4] == 0;
        case SYS_read:
        case SYS_write:
        case SYS_readv:
        case SYS_writev:
        case SYS_pread64:
        case SYS_pwrite64:
        case SYS_preadv:
        case SYS_pwritev:
        case SYS_recvfrom:
        case SYS_sendto:
        case SYS_recvmsg:
        case SYS_sendmsg:
        case SYS_sendmmsg:
        case SYS_accept:
        case SYS_accept4:
        case SYS_wait4:
        case SYS_waitid:
        case SYS_flock:
        case SYS_msgrcv:
        case SYS_msgsnd:
        case SYS_sendfile:
        case SYS_splice:
            return true;
        default:
            return false;  // timeouts a restart would stretch (nanosleep, timed polls), connect,
                           // ...
    }
}

RetakeLook tryRetake(Core* core, uint64_t switches, RetakeWatch* watch, bool preemptionDue) {
    Carrier* c = core->carrier.load(std::memory_order_acquire);
    if (!c || !c->nativeTcb) return RetakeLook::other;
    const int tid = GlibcTcb::userThreadId(c->nativeTcb);
    // A carrier that used its CPU since the last look computes (or spins): no /proc read, unless a
    // preemption would follow. Then it may have gone to sleep in a call since (a loaded host
    // stretches its way in), and the signal would cut that call short: a raw nanosleep returned
    // EINTR, which it never does natively without a signal of the program's.
    timespec cpu{};
    rawSyscall(SYS_clock_gettime, threadCpuClock(tid), reinterpret_cast<long>(&cpu));
    const uint64_t cpuNs = uint64_t(cpu.tv_sec) * 1'000'000'000 + uint64_t(cpu.tv_nsec);
    const uint64_t wallNs = nowNs();
    const bool computing = watch->carrier == c && watch->wallNs != 0 &&
                           (cpuNs - watch->cpuNs) * 2 > wallNs - watch->wallNs;
    watch->carrier = c;
    watch->cpuNs = cpuNs;
    watch->wallNs = wallNs;
    if (computing && !preemptionDue) return RetakeLook::computing;
    const RetakeLook unknown = computing ? RetakeLook::computing : RetakeLook::other;
    const int fd = syscallFile(c, tid);
    if (fd < 0) return unknown;
    char text[256];
    const long n = rawSyscall(SYS_pread64, fd, reinterpret_cast<long>(text), sizeof text - 1, 0);
    if (n <= 0) return unknown;
    long number, args[6];
    uintptr_t resumePc;
    if (!parseSyscallFile(std::string_view(text, size_t(n)), &number, args, &resumePc)) {
        return unknown;  // running (or blocked outside a call)
    }
    if (!retakeable(number, args)) return RetakeLook::asleep;
    if (core->blockingSince.load(std::memory_order_relaxed) != 0) return RetakeLook::other;
    core->retakeSyscall.store(number, std::memory_order_relaxed);
    core->retakeResumePc.store(resumePc, std::memory_order_relaxed);
    requestPreemption(core, switches, kRetakeRequest);  // release: publishes the two above
    return RetakeLook::asked;
}

void redirectForRetake(Core* core, void* ucontext) {
    auto* uc = static_cast<ucontext_t*>(ucontext);
    greg_t* r = uc->uc_mcontext.gregs;
    const long number = core->retakeSyscall.load(std::memory_order_relaxed);
    const uintptr_t resume = core->retakeResumePc.load(std::memory_order_relaxed);
    const auto pc = uintptr_t(r[REG_RIP]);
    const bool rewound = pc + 2 == resume && r[REG_RAX] == number;  // the kernel's restart
    const bool interrupted = pc == resume && r[REG_RAX] == -EINTR;
    if (!rewound && !interrupted) return;  // the call returned meanwhile: nothing to do
    // A call the thread bracketed itself (an interposed wrapper: it stamped blockingSince before
    // the call, on this thread, so the stamp is visible here) is the lending path's already; a
    // second bracket would overwrite the wrapper's stamp, and its exit would wait forever for a
    // lend that never comes. The signal was harmless: the kernel restarts or the wrapper retries.
    if (core->blockingSince.load(std::memory_order_relaxed) != 0) {
        if (interrupted) {  // restart it in place, as the kernel's own restart would
            r[REG_RAX] = number;
            r[REG_RIP] = greg_t(pc - 2);
        }
        return;
    }
    currentContext()->preemptedPc = kReissueBlocking;
    r[REG_RAX] = number;
    enterSyscallTrampoline(uc, resume);
}

long reissueAsBlockingCall(long number, const long args[6]) {
    Carrier* self = currentContext()->carrier;
    Core* core = self->core;
    // Overdue from the start: the thread has slept in this call for longer than lendAfterNs.
    const uint64_t stamp = blockingStamp(rdtsc() - gRuntime->lendAfterTicks);
    core->blockingSince.store(stamp, std::memory_order_relaxed);
    if (!lendOwnCoreNow(self, stamp)) nudgeMonitorFor(core);
    gRetakes.fetch_add(1, std::memory_order_relaxed);
    const long result = rawSyscall(number, args[0], args[1], args[2], args[3], args[4], args[5]);
    exitBlockingCall(stamp);
    return result;
}

uint64_t retakeCount() {
    return gRetakes.load(std::memory_order_relaxed);
}

void closeRetakeFiles(Carrier* carriers, int count) {
    for (int i = 0; i < count; ++i) {
        if (carriers[i].syscallFileFd >= 0) rawSyscall(SYS_close, carriers[i].syscallFileFd);
        carriers[i].syscallFileFd = -1;
    }
}

}  // namespace arbrt::detail
