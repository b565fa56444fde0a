// Running a program as arbrun's child and measuring it (`arbrun ab`, `arbrun doctor`'s preload
// trial). The exec itself is launch.cc's execProgram(), so a child sees exactly the environment
// and PATH search that `arbrun -- program` gives it.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace arbrun {

// What to run and where its standard streams go. File descriptors stay owned by the caller.
struct ChildSpec {
    std::vector<std::string> command;                              // never empty
    std::vector<std::pair<std::string, std::string>> environment;  // set on top of arbrun's own
    int stdinFd = -1, stdoutFd = -1, stderrFd = -1;                // -1: inherited from arbrun
    int timeoutMs = 0;  // > 0: killed (SIGKILL) when still running after this long
};

// How a child ended.
struct ChildResult {
    bool execFailed = false;  // the program could not be started: see execStatus, execError
    int execStatus = 0;       // 126 or 127, as a shell (exitStatusForExecError)
    std::string execError;    // one line: "cannot run 'prog': No such file or directory"
    bool timedOut = false;    // killed after ChildSpec::timeoutMs
    int waitStatus = 0;       // raw wait status (WIFEXITED/WIFSIGNALED)
    int64_t wallNs = 0;       // fork to reaped, CLOCK_MONOTONIC
    int64_t cpuNs = 0;        // user + system time of the child and its waited-for children
    long maxRssKiB = 0;       // ru_maxrss of the same
};

// Forks, points the child's streams at spec's descriptors, and execs spec.command with
// spec.environment; waits for it (wait4) and fills *result. False with *error set only when the
// child could not be created at all (pipe or fork failed).
bool runChild(const ChildSpec& spec, ChildResult* result, std::string* error);

}  // namespace arbrun
