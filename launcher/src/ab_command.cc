// `arbrun ab`: native and arbrun runs alternately, each measured by child_process.cc with its
// stdout in a scratch file; the comparison and the table are ab_report.cc's.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "ab_report.h"
#include "child_process.h"
#include "launch.h"
#include "preload_library.h"
#include "scratch_file.h"
#include "subcommands.h"

namespace arbrun {
namespace {

// Closes on every way out of runAb().
class FileDescriptor {
  public:
    explicit FileDescriptor(int fd) : fd_(fd) {}
    ~FileDescriptor() {
        if (fd_ >= 0) close(fd_);
    }
    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;
    int get() const { return fd_; }

  private:
    int fd_;
};

// One line with the program's name, as main() reports errors.
int fail(int status, const std::string& message) {
    std::fprintf(stderr, "arbrun: %s\n", message.c_str());
    return status;
}

}  // namespace

// Alternating (not all native, then all arbrun) spreads slow drifts of the machine (frequency,
// caches, other load) over both modes. Run 1 is native and its stdout is the reference.
int runAb(const Invocation& invocation) {
    std::string library, error;
    if (!locatePreloadLibrary(std::getenv("ARBRUN_PRELOAD_LIB"), &library, &error)) {
        return fail(kExitUsage, error);
    }
    const Environment underArbrun =
        programEnvironment(invocation.config, library, std::getenv("LD_PRELOAD"));
    const FileDescriptor devNull(open("/dev/null", O_RDONLY | O_CLOEXEC));
    const FileDescriptor reference(openScratchFile(&error));
    if (reference.get() < 0) return fail(1, error);
    const FileDescriptor current(openScratchFile(&error));
    if (current.get() < 0) return fail(1, error);

    const size_t total = size_t(invocation.runs) * 2;
    std::vector<RunSample> runs;
    for (size_t i = 0; i < total; ++i) {
        const RunMode mode = i % 2 == 0 ? RunMode::native : RunMode::arbrun;
        const int out = i == 0 ? reference.get() : current.get();
        if (i > 0 && !resetScratchFile(out, &error)) return fail(1, error);
        ChildSpec spec;
        spec.command = invocation.command;
        if (mode == RunMode::arbrun) spec.environment = underArbrun;
        spec.stdinFd = devNull.get();
        spec.stdoutFd = out;
        std::fflush(nullptr);  // nothing buffered here may be written twice or late
        ChildResult result;
        if (!runChild(spec, &result, &error)) return fail(1, error);
        if (result.execFailed) return fail(result.execStatus, result.execError);
        RunSample& sample = runs.emplace_back();
        sample.mode = mode;
        sample.waitStatus = result.waitStatus;
        sample.wallNs = result.wallNs;
        sample.cpuNs = result.cpuNs;
        sample.maxRssKiB = result.maxRssKiB;
        sample.stdoutMatches = i == 0 || sameContents(reference.get(), current.get());
        std::fprintf(stderr, "%s\n", formatProgress(runs, i, total).c_str());
    }
    std::fputs(formatAbReport(runs, "'" + invocation.command[0] + "'").c_str(), stdout);
    return abExitStatus(runs);
}

}  // namespace arbrun
