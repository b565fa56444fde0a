// runChild() (fork, execProgram, wait4) and the scratch files arbrun ab captures output in, with
// ordinary programs (/bin/sh, /bin/echo) as children.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "child_process.h"
#include "scratch_file.h"

namespace arbrun {
namespace {

// A scratch file closed at the end of the test.
class Scratch {
  public:
    Scratch() {
        std::string error;
        fd_ = openScratchFile(&error);
        EXPECT_GE(fd_, 0) << error;
    }
    ~Scratch() {
        if (fd_ >= 0) close(fd_);
    }
    int fd() const { return fd_; }

  private:
    int fd_ = -1;
};

// Runs `command` with stdout into `out`; the result.
ChildResult runInto(const std::vector<std::string>& command, int out,
                    const std::vector<std::pair<std::string, std::string>>& environment = {}) {
    ChildSpec spec;
    spec.command = command;
    spec.environment = environment;
    spec.stdoutFd = out;
    ChildResult result;
    std::string error;
    EXPECT_TRUE(runChild(spec, &result, &error)) << error;
    return result;
}

TEST(RunChild, CapturesStdoutStatusAndUsage) {
    Scratch out;
    const ChildResult r = runInto({"/bin/sh", "-c", "echo hello; exit 3"}, out.fd());
    EXPECT_FALSE(r.execFailed);
    ASSERT_TRUE(WIFEXITED(r.waitStatus));
    EXPECT_EQ(WEXITSTATUS(r.waitStatus), 3);
    EXPECT_EQ(readScratchFile(out.fd()), "hello\n");
    EXPECT_GT(r.wallNs, 0);
    EXPECT_GT(r.maxRssKiB, 0);
}

TEST(RunChild, SetsTheEnvironmentOnlyInTheChild) {
    Scratch out;
    ASSERT_EQ(std::getenv("ARBRUN_CHILD_TEST"), nullptr);
    runInto({"/bin/sh", "-c", "echo \"$ARBRUN_CHILD_TEST\""}, out.fd(),
            {{"ARBRUN_CHILD_TEST", "x y"}});
    EXPECT_EQ(readScratchFile(out.fd()), "x y\n");
    EXPECT_EQ(std::getenv("ARBRUN_CHILD_TEST"), nullptr);
}

TEST(RunChild, SearchesPath) {
    Scratch out;
    const ChildResult r = runInto({"echo", "found"}, out.fd());
    EXPECT_FALSE(r.execFailed) << r.execError;
    EXPECT_EQ(readScratchFile(out.fd()), "found\n");
}

TEST(RunChild, MissingProgramIsAnExecFailure) {
    Scratch out;
    const ChildResult r = runInto({"no-such-program-arbrun-test"}, out.fd());
    EXPECT_TRUE(r.execFailed);
    EXPECT_EQ(r.execStatus, 127);
    EXPECT_EQ(r.execError, "cannot run 'no-such-program-arbrun-test': No such file or directory");
    EXPECT_EQ(readScratchFile(out.fd()), "");
}

TEST(RunChild, DeathBySignalIsReported) {
    Scratch out;
    const ChildResult r = runInto({"/bin/sh", "-c", "kill -TERM $$"}, out.fd());
    ASSERT_TRUE(WIFSIGNALED(r.waitStatus));
    EXPECT_EQ(WTERMSIG(r.waitStatus), SIGTERM);
}

// The time limit kills a child that does not end by itself (one that waits on its stdin, a pipe
// nobody writes to and this test keeps open).
TEST(RunChild, TimeoutKillsTheChild) {
    int never[2];
    ASSERT_EQ(pipe(never), 0);
    ChildSpec spec;
    spec.command = {"/bin/sh", "-c", "read line"};
    spec.stdinFd = never[0];
    spec.timeoutMs = 50;
    ChildResult r;
    std::string error;
    ASSERT_TRUE(runChild(spec, &r, &error)) << error;
    close(never[0]);
    close(never[1]);
    EXPECT_TRUE(r.timedOut);
    ASSERT_TRUE(WIFSIGNALED(r.waitStatus));
    EXPECT_EQ(WTERMSIG(r.waitStatus), SIGKILL);
}

TEST(ScratchFile, LeavesNothingInTheDirectory) {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                      ("arbrun-scratch-test-" + std::to_string(getpid()));
    std::filesystem::create_directory(dir);
    const char* old = std::getenv("TMPDIR");
    const std::string saved = old ? old : "";
    setenv("TMPDIR", dir.c_str(), 1);
    std::string error;
    const int fd = openScratchFile(&error);
    old ? setenv("TMPDIR", saved.c_str(), 1) : unsetenv("TMPDIR");
    EXPECT_GE(fd, 0) << error;
    EXPECT_TRUE(std::filesystem::is_empty(dir));
    if (fd >= 0) close(fd);
    std::filesystem::remove_all(dir);
}

TEST(ScratchFile, UnwritableDirectoryNamesIt) {
    const char* old = std::getenv("TMPDIR");
    const std::string saved = old ? old : "";
    setenv("TMPDIR", "/nonexistent-arbrun-test", 1);
    std::string error;
    const int fd = openScratchFile(&error);
    old ? setenv("TMPDIR", saved.c_str(), 1) : unsetenv("TMPDIR");
    EXPECT_EQ(fd, -1);
    EXPECT_EQ(error.rfind("cannot create a temporary file in /nonexistent-arbrun-test (", 0), 0u)
        << error;
}

TEST(SameContents, ComparesBytes) {
    Scratch a, b;
    runInto({"/bin/echo", "same"}, a.fd());
    runInto({"/bin/echo", "same"}, b.fd());
    EXPECT_TRUE(sameContents(a.fd(), b.fd()));
    std::string error;
    ASSERT_TRUE(resetScratchFile(b.fd(), &error)) << error;
    runInto({"/bin/echo", "sane"}, b.fd());
    EXPECT_FALSE(sameContents(a.fd(), b.fd()));  // same size, one byte differs
    ASSERT_TRUE(resetScratchFile(b.fd(), &error)) << error;
    runInto({"/bin/echo", "same", "x"}, b.fd());
    EXPECT_FALSE(sameContents(a.fd(), b.fd()));  // longer
    ASSERT_TRUE(resetScratchFile(b.fd(), &error)) << error;
    EXPECT_FALSE(sameContents(a.fd(), b.fd()));  // empty
}

TEST(SameContents, LargerThanOneBlock) {
    Scratch a, b;
    const std::vector<std::string> big = {"/bin/sh", "-c",
                                          "i=0; while [ $i -lt 20000 ]; do echo line $i; "
                                          "i=$((i+1)); done"};
    runInto(big, a.fd());
    runInto(big, b.fd());
    EXPECT_GT(readScratchFile(a.fd()).size(), 65536u);
    EXPECT_TRUE(sameContents(a.fd(), b.fd()));
}

}  // namespace
}  // namespace arbrun
