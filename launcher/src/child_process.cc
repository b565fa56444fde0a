// fork + execProgram + wait4. arbrun is single-threaded, so the child may call setenv() (inside
// execProgram) between fork and exec.
#include "child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "launch.h"

namespace arbrun {
namespace {

// CLOCK_MONOTONIC in nanoseconds: wall time that NTP steps cannot bend.
int64_t monotonicNs() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// rusage times are timevals; everything else here counts nanoseconds.
int64_t toNs(const timeval& tv) {
    return int64_t(tv.tv_sec) * 1'000'000'000 + int64_t(tv.tv_usec) * 1000;
}

// In the child: streams, then exec. On failure the status and message go up the report pipe (the
// parent tells "could not run" from "ran and exited 127" that way) and the child exits.
[[noreturn]] void childMain(const ChildSpec& spec, int reportFd) {
    const int targets[3] = {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO};
    const int sources[3] = {spec.stdinFd, spec.stdoutFd, spec.stderrFd};
    for (int i = 0; i < 3; ++i) {
        if (sources[i] >= 0 && dup2(sources[i], targets[i]) < 0) _exit(kExitCannotExecute);
    }
    std::string error;
    const int status = execProgram(spec.environment, spec.command, &error);
    const std::string report = std::to_string(status) + " " + error;
    (void)!write(reportFd, report.data(), report.size());
    _exit(status);
}

// Everything the child wrote to the report pipe before exec closed it: empty when exec worked.
std::string readReport(int fd) {
    std::string report;
    char buffer[512];
    for (;;) {
        const ssize_t n = read(fd, buffer, sizeof buffer);
        if (n > 0) {
            report.append(buffer, size_t(n));
        } else if (n == 0 || errno != EINTR) {
            return report;
        }
    }
}

// Waits up to `timeoutMs` for `pid` to end (a pidfd becomes readable at exit) and kills it when it
// has not. Without pidfd_open (Linux < 5.3) there is no time limit.
bool killAfter(pid_t pid, int timeoutMs) {
    const int pidfd = int(syscall(SYS_pidfd_open, pid, 0));
    if (pidfd < 0) return false;
    pollfd p{pidfd, POLLIN, 0};
    int ready;
    do {
        ready = poll(&p, 1, timeoutMs);
    } while (ready < 0 && errno == EINTR);
    close(pidfd);
    if (ready != 0) return false;
    kill(pid, SIGKILL);
    return true;
}

}  // namespace

// The report pipe is close-on-exec: EOF without data means the program is running.
bool runChild(const ChildSpec& spec, ChildResult* result, std::string* error) {
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) {
        *error = std::string("cannot create a pipe (") + std::strerror(errno) + ")";
        return false;
    }
    *result = ChildResult{};
    const int64_t start = monotonicNs();
    const pid_t pid = fork();
    if (pid < 0) {
        *error = std::string("cannot fork (") + std::strerror(errno) + ")";
        close(report[0]);
        close(report[1]);
        return false;
    }
    if (pid == 0) {
        close(report[0]);
        childMain(spec, report[1]);
    }
    close(report[1]);
    const std::string failure = readReport(report[0]);
    close(report[0]);
    if (spec.timeoutMs > 0 && failure.empty()) result->timedOut = killAfter(pid, spec.timeoutMs);
    rusage usage{};
    while (wait4(pid, &result->waitStatus, 0, &usage) < 0 && errno == EINTR) {
    }
    result->wallNs = monotonicNs() - start;
    result->cpuNs = toNs(usage.ru_utime) + toNs(usage.ru_stime);
    result->maxRssKiB = usage.ru_maxrss;
    if (!failure.empty()) {
        result->execFailed = true;
        const size_t space = failure.find(' ');
        result->execStatus = std::atoi(failure.substr(0, space).c_str());
        result->execError = space == std::string::npos ? "" : failure.substr(space + 1);
    }
    return true;
}

}  // namespace arbrun
