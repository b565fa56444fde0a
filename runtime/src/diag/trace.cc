// The core timeline (format in trace.h). Events are rare (grants, releases, requests, a sample
// every 10 ms), so one spin lock around a small buffer and a write(2) per row batch suffices.
#include "diag/trace.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "arbrt/time.h"
#include "platform/arch.h"
#include "sched/runtime_state.h"

namespace arbrt::detail {
namespace {

constexpr uint64_t kSampleIntervalNs = 10'000'000;

// Written under gLock by whichever kernel thread records; gFd is set before the carriers start
// and cleared by closeTrace() after they stopped.
SpinLock gLock{LockRank::trace};
int gFd = -1;
uint64_t gStartNs = 0;
uint64_t gLastSampleNs = 0;
std::vector<uint64_t> gLastIdleTicks;  // per core, at the last util sample

const char* eventName(TraceEvent e) {
    switch (e) {
        case TraceEvent::start:
            return "start";
        case TraceEvent::grant:
            return "grant";
        case TraceEvent::release:
            return "release";
        case TraceEvent::request:
            return "request";
        case TraceEvent::util:
            return "util";
        case TraceEvent::stop:
            return "stop";
    }
    return "?";
}

// Raw write: under the preload library, libc's write() is interposed (harmless on the runtime's
// kernel threads, but this keeps the trace independent of it).
void writeAll(const char* data, size_t size) {
    while (size > 0) {
        const long n = rawSyscall(SYS_write, gFd, reinterpret_cast<long>(data), long(size));
        if (n == -EINTR) continue;
        if (n <= 0) return;  // disk full or closed: the trace is best effort
        data += n;
        size -= size_t(n);
    }
}

int formatRow(char* out, size_t size, uint64_t nowNs, TraceEvent e, int core, int cpu,
              double value) {
    return std::snprintf(out, size, "%.6f,%s,%d,%d,%.4g\n", double(nowNs - gStartNs) * 1e-9,
                         eventName(e), core, cpu, value);
}

}  // namespace

bool openTrace(const std::string& path, std::string* error) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        if (error) *error = "cannot open trace file " + path + ": " + std::strerror(errno);
        return false;
    }
    gFd = fd;
    gStartNs = gLastSampleNs = nowNs();
    gLastIdleTicks.assign(size_t(gRuntime->numCores), 0);
    static const char kHeader[] = "time_s,event,core,cpu,value\n";
    writeAll(kHeader, sizeof kHeader - 1);
    return true;
}

void traceEvent(TraceEvent event, int core, int cpu, double value) {
    if (gFd < 0) return;
    char row[128];
    gLock.lock();
    const int n = formatRow(row, sizeof row, nowNs(), event, core, cpu, value);
    writeAll(row, size_t(n));
    gLock.unlock();
}

bool tracing() {
    return gFd >= 0;
}

void traceUtilisationIfDue() {
    if (gFd < 0) return;
    const uint64_t now = nowNs();
    if (now - gLastSampleNs < kSampleIntervalNs) return;
    RuntimeState& rt = *gRuntime;
    const double intervalTicks = double(ticksForNs(now - gLastSampleNs));
    const uint64_t tsc = rdtsc();
    std::string batch;
    char row[128];
    gLock.lock();
    for (int i = 0; i < rt.numCores; ++i) {
        // Idle time so far, including the current idle stretch (a running thread's busy time is
        // only added when it returns to the dispatcher; idle time is exact at any moment).
        const Core& core = rt.cores[i];
        const uint64_t idle = idleTicksNow(core, tsc);
        const uint64_t delta = idle - gLastIdleTicks[size_t(i)];
        gLastIdleTicks[size_t(i)] = idle;
        if (!core.active.load(std::memory_order_relaxed)) continue;
        const double util = std::clamp(1.0 - double(delta) / intervalTicks, 0.0, 1.0);
        batch.append(row, size_t(formatRow(row, sizeof row, now, TraceEvent::util, i, -1, util)));
    }
    gLastSampleNs = now;
    writeAll(batch.data(), batch.size());
    gLock.unlock();
}

void closeTrace() {
    if (gFd < 0) return;
    traceEvent(TraceEvent::stop, -1, -1, 0);
    ::close(gFd);
    gFd = -1;
}

}  // namespace arbrt::detail
