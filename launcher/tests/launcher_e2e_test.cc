// build/bin/arbrun end to end: fork/exec of the real binary with a clean environment, the preload
// library replaced by an empty file (ld.so ignores it with a warning), and ordinary programs
// (/usr/bin/env, /bin/sh) as the payload.
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>

#include <arbconfig/config.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "helpers/temp_dir.h"
#include "preload_library.h"

namespace {

namespace fs = std::filesystem;

// The real preload library, for the tests that need the runtime to start in a program. In the
// sanitizer tree it is instrumented and cannot be preloaded into uninstrumented programs (ASan
// must come first), so those tests use the fixture's empty stand-in there.
#ifdef ARBRUN_SANITIZE
constexpr bool kRealPreloadUsable = false;
#else
constexpr bool kRealPreloadUsable = true;
#endif

using launcher_test::TempDir;

struct Result {
    int status = -1;  // raw wait status
    std::string out, err;
};

// The environment every run starts from: nothing inherited but the sanitizer settings.
std::map<std::string, std::string> baseEnv() {
    std::map<std::string, std::string> env = {{"PATH", "/usr/bin:/bin"}};
    for (const char* name : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"}) {
        if (const char* v = std::getenv(name)) env[name] = v;
    }
    return env;
}

// Runs argv with exactly `env`, optionally in `cwd`, collecting stdout and stderr. The child dies
// with this test (PDEATHSIG); a run that outlives the safety deadline is killed and reported.
Result run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
           const std::string& cwd = "") {
    std::vector<std::string> envStrings;
    for (const auto& [k, v] : env) envStrings.push_back(k + "=" + v);
    std::vector<char*> argp, envp;
    for (const auto& s : argv) argp.push_back(const_cast<char*>(s.c_str()));
    for (const auto& s : envStrings) envp.push_back(const_cast<char*>(s.c_str()));
    argp.push_back(nullptr);
    envp.push_back(nullptr);

    int outPipe[2], errPipe[2];
    Result r;
    if (pipe2(outPipe, O_CLOEXEC) != 0 || pipe2(errPipe, O_CLOEXEC) != 0) {
        ADD_FAILURE() << "pipe";
        return r;
    }
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(99);
        dup2(outPipe[1], 1);
        dup2(errPipe[1], 2);
        if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(98);
        execve(argp[0], argp.data(), envp.data());
        _exit(97);
    }
    close(outPipe[1]);
    close(errPipe[1]);
    pollfd fds[2] = {{outPipe[0], POLLIN, 0}, {errPipe[0], POLLIN, 0}};
    std::string* sinks[2] = {&r.out, &r.err};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    int open = 2;
    while (open > 0) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0 || poll(fds, 2, int(left.count())) == 0) {
            kill(pid, SIGKILL);
            ADD_FAILURE() << "timed out: " << argv[0];
            break;
        }
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            char buf[4096];
            const ssize_t n = read(fds[i].fd, buf, sizeof buf);
            if (n > 0) {
                sinks[i]->append(buf, size_t(n));
            } else {
                close(fds[i].fd);
                fds[i].fd = -1;
                --open;
            }
        }
    }
    for (const pollfd& p : fds) {
        if (p.fd >= 0) close(p.fd);
    }
    waitpid(pid, &r.status, 0);
    return r;
}

std::map<std::string, std::string> parseEnvOutput(const std::string& out) {
    std::map<std::string, std::string> env;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
        const size_t eq = line.find('=');
        if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
    }
    return env;
}

int exitCode(const Result& r) {
    return WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1;
}

// The configuration the preload library reads from a program's environment.
arbconfig::Config configIn(const std::map<std::string, std::string>& env) {
    arbconfig::Config config;
    std::string error;
    EXPECT_TRUE(arbconfig::fromEnvironment(
        [&](const char* name) -> const char* {
            auto it = env.find(name);
            return it == env.end() ? nullptr : it->second.c_str();
        },
        &config, &error))
        << error;
    return config;
}

class Launcher : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_FALSE(dir_.path().empty()) << "mkdtemp failed";
        lib_ = dir_.touch("lib/libarbrun.so");
        env_ = baseEnv();
        env_["ARBRUN_PRELOAD_LIB"] = lib_;
    }

    Result arbrun(std::vector<std::string> args) {
        args.insert(args.begin(), ARBRUN_BINARY);
        return run(args, env_);
    }

    TempDir dir_;
    std::string lib_;
    std::map<std::string, std::string> env_;
};

TEST_F(Launcher, ExportsPreloadFirstAndTheConfiguration) {
    env_["LD_PRELOAD"] = "/nonexistent-arbrun-test/a.so:/nonexistent-arbrun-test/b.so";
    env_["ARBRUN_CLASS"] = "stale garbage";  // replaced, not inherited
    const Result r = arbrun({"--cores", "2:3", "--priority", "1", "--class", "name:a;b=batch",
                             "--class", "index:0=exclusive", "--default-class", "batch", "--stats",
                             "--explain-classes", "--", "/usr/bin/env"});
    ASSERT_EQ(exitCode(r), 0) << r.err;
    const auto env = parseEnvOutput(r.out);
    EXPECT_EQ(env.at("LD_PRELOAD"),
              lib_ + ":/nonexistent-arbrun-test/a.so:/nonexistent-arbrun-test/b.so");
    EXPECT_EQ(env.at("ARBRUN_CORES"), "2:3");
    EXPECT_EQ(env.at("ARBRUN_PRIORITY"), "1");
    EXPECT_EQ(env.at("ARBRUN_CLASS"), "name:a%3Bb=batch;index:0=exclusive");
    EXPECT_EQ(env.at("ARBRUN_DEFAULT_CLASS"), "batch");
    EXPECT_EQ(env.at("ARBRUN_ARBITER"), "/run/arbrun/arbiter.sock");
    EXPECT_EQ(env.at("ARBRUN_STANDALONE"), "0");
    EXPECT_EQ(env.at("ARBRUN_STATS"), "1");
    EXPECT_EQ(env.at("ARBRUN_VERBOSE"), "0");
    EXPECT_EQ(env.at("ARBRUN_EXPLAIN_CLASSES"), "1");
    EXPECT_EQ(env.at("PATH"), "/usr/bin:/bin");

    // What the program received reads back, through the shared parser, as what was asked for.
    const arbconfig::Config seen = configIn(env);
    EXPECT_EQ(seen.minCores, 2u);
    EXPECT_EQ(seen.maxCores, 3u);
    ASSERT_EQ(seen.classRules.size(), 2u);
    EXPECT_EQ(seen.classRules[0].glob, "a;b");
    EXPECT_EQ(seen.defaultClass, arbconfig::ThreadClass::batch);
    EXPECT_TRUE(seen.stats);
    EXPECT_TRUE(seen.explainClasses);
}

TEST_F(Launcher, NoExistingPreload) {
    const Result r = arbrun({"--standalone", "--", "/usr/bin/env"});
    ASSERT_EQ(exitCode(r), 0) << r.err;
    const auto env = parseEnvOutput(r.out);
    EXPECT_EQ(env.at("LD_PRELOAD"), lib_);
    EXPECT_EQ(env.at("ARBRUN_STANDALONE"), "1");
}

// The program's ARBRUN_* variables, "NAME=VALUE" in name order.
std::vector<std::string> arbrunVariables(const std::map<std::string, std::string>& env) {
    std::vector<std::string> out;
    for (const auto& [name, value] : env) {
        if (name.rfind("ARBRUN_", 0) == 0) out.push_back(name + "=" + value);
    }
    return out;
}

// `arbrun [--standalone] -- program` in an environment without ARBRUN_* variables or LD_PRELOAD
// is the fast start's (arbfast/fast_start.h): it sets LD_PRELOAD and ARBRUN_STANDALONE only.
// With an ARBRUN_* variable in arbrun's environment the same command goes to the full launcher,
// which sets every variable; the configuration the preload library reads is the same.
TEST_F(Launcher, FastStartConfiguresAsTheFullLauncher) {
    for (const bool standalone : {false, true}) {
        std::vector<std::string> args = {"--", "/usr/bin/env"};
        if (standalone) args.insert(args.begin(), "--standalone");
        const Result fast = arbrun(args);
        ASSERT_EQ(exitCode(fast), 0) << fast.err;
        const auto fastEnv = parseEnvOutput(fast.out);
        std::vector<std::string> expected = {"ARBRUN_PRELOAD_LIB=" + lib_};
        if (standalone) expected.push_back("ARBRUN_STANDALONE=1");
        EXPECT_EQ(arbrunVariables(fastEnv), expected);
        EXPECT_EQ(fastEnv.at("LD_PRELOAD"), lib_);
        EXPECT_EQ(fastEnv.at("PATH"), "/usr/bin:/bin");

        env_["ARBRUN_PRIORITY"] = "6";  // replaced by the full launcher, not inherited
        const Result full = arbrun(args);
        env_.erase("ARBRUN_PRIORITY");
        ASSERT_EQ(exitCode(full), 0) << full.err;
        const auto fullEnv = parseEnvOutput(full.out);
        EXPECT_EQ(fullEnv.at("ARBRUN_PRIORITY"), "3");
        EXPECT_EQ(fullEnv.at("LD_PRELOAD"), lib_);
        const arbconfig::Config fromFast = configIn(fastEnv);
        EXPECT_TRUE(fromFast == configIn(fullEnv)) << "standalone " << standalone;
        EXPECT_EQ(fromFast.standalone, standalone);
    }
}

// Everything the fast start does not handle reaches the full launcher unchanged: it then sets
// every ARBRUN_* variable (ARBRUN_PRIORITY shows it).
TEST_F(Launcher, FastStartLeavesEverythingElseToTheFullLauncher) {
    const std::string script = dir_.path() / "env.sh";
    {
        std::ofstream(script) << "#!/bin/sh\nexec /usr/bin/env\n";
        chmod(script.c_str(), 0755);
    }
    struct Case {
        std::string what;
        std::vector<std::string> args;
        std::map<std::string, std::string> extraEnv;
        std::string preload;  // the LD_PRELOAD the program sees
    };
    const std::string other = "/nonexistent-arbrun-test/other.so";
    const std::string unnormal = (dir_.path() / "." / "lib" / "libarbrun.so").string();
    const Case cases[] = {
        {"an option", {"--cores", "1", "--", "/usr/bin/env"}, {}, lib_},
        {"no --", {"/usr/bin/env"}, {}, lib_},
        {"LD_PRELOAD set", {"--", "/usr/bin/env"}, {{"LD_PRELOAD", other}}, lib_ + ":" + other},
        {"an override not in normal form",
         {"--", "/usr/bin/env"},
         {{"ARBRUN_PRELOAD_LIB", unnormal}},
         lib_},
        {"a script", {"--standalone", "--", script}, {}, lib_},
    };
    for (const Case& c : cases) {
        auto env = env_;
        for (const auto& [name, value] : c.extraEnv) env[name] = value;
        std::vector<std::string> argv = c.args;
        argv.insert(argv.begin(), ARBRUN_BINARY);
        const Result r = run(argv, env);
        ASSERT_EQ(exitCode(r), 0) << c.what << ": " << r.err;
        const auto seen = parseEnvOutput(r.out);
        EXPECT_EQ(seen.count("ARBRUN_PRIORITY"), 1u) << c.what;
        EXPECT_EQ(seen.at("LD_PRELOAD"), c.preload) << c.what;
    }
}

// A small stack limit (`ulimit -s 32`, where glibc programs still run): the fast start keeps what
// it needs off the stack (a 45 KiB frame crashed there), and the full launcher runs as before.
TEST_F(Launcher, FastStartAndFullLauncherRunWithA32KiBStack) {
#ifdef ARBRUN_SANITIZE
    GTEST_SKIP() << "an instrumented arbrun needs more stack than the product";
#endif
    for (const bool full : {false, true}) {
        auto env = env_;
        if (full) env["ARBRUN_PRIORITY"] = "3";  // any ARBRUN_* variable: the full launcher
        const Result r =
            run({"/bin/sh", "-c", "ulimit -s 32 && exec \"$0\" --standalone -- /usr/bin/env",
                 ARBRUN_BINARY},
                env);
        ASSERT_EQ(exitCode(r), 0) << (full ? "full launcher: " : "fast start: ") << r.err;
        const auto seen = parseEnvOutput(r.out);
        EXPECT_EQ(seen.at("LD_PRELOAD"), lib_);
        EXPECT_EQ(seen.count("ARBRUN_DEFAULT_CLASS"), full ? 1u : 0u);
    }
}

// The program gets arbrun's arguments after `--` as they were, its own name included, and its
// exit status is arbrun's.
TEST_F(Launcher, FastStartPassesArgumentsThrough) {
    const Result r = arbrun({"--standalone", "--", "sh", "-c", "printf '%s|' \"$0\" \"$@\"; exit 3",
                             "zero", "a b", ""});
    EXPECT_EQ(exitCode(r), 3) << r.err;
    EXPECT_EQ(r.out, "zero|a b||");
}

TEST_F(Launcher, ProgramFoundOnPathWithoutDoubleDash) {
    const Result r = arbrun({"env"});
    ASSERT_EQ(exitCode(r), 0) << r.err;
    EXPECT_EQ(parseEnvOutput(r.out).at("ARBRUN_PRIORITY"), "3");
}

TEST_F(Launcher, RelativeOverrideBecomesAbsolute) {
    env_["ARBRUN_PRELOAD_LIB"] = "lib/libarbrun.so";
    const Result r = run({ARBRUN_BINARY, "--", "/usr/bin/env"}, env_, dir_.path().string());
    ASSERT_EQ(exitCode(r), 0) << r.err;
    EXPECT_EQ(parseEnvOutput(r.out).at("LD_PRELOAD"), lib_);
}

TEST_F(Launcher, ExitStatusPassesThrough) {
    const Result r = arbrun({"--", "/bin/sh", "-c", "exit 7"});
    ASSERT_TRUE(WIFEXITED(r.status)) << r.err;
    EXPECT_EQ(WEXITSTATUS(r.status), 7);
}

TEST_F(Launcher, DeathBySignalPassesThrough) {
    const Result r = arbrun({"--", "/bin/sh", "-c", "kill -TERM $$"});
    ASSERT_TRUE(WIFSIGNALED(r.status)) << "status " << r.status << " " << r.err;
    EXPECT_EQ(WTERMSIG(r.status), SIGTERM);
}

TEST_F(Launcher, BadOptionsExitTwoWithOneLine) {
    const struct {
        std::vector<std::string> args;
        std::string message;
    } cases[] = {
        {{"--cores", "0", "--", "/bin/true"},
         "arbrun: --cores: '0' is not valid: at least one core is needed; expected N, MIN:MAX or "
         "MIN: with 1 <= MIN <= MAX <= 256\n"},
        {{"--priority", "9", "--", "/bin/true"},
         "arbrun: --priority: '9' is not valid; expected an integer from 0 (highest) to 7 "
         "(lowest)\n"},
        {{"--class", "thread:x=batch", "--", "/bin/true"},
         "arbrun: --class: 'thread:x=batch' is not valid: unknown rule kind 'thread' (sym, name, "
         "caller or index); expected RULE=CLASS with RULE sym:GLOB, name:GLOB, caller:GLOB or "
         "index:N[-M] and CLASS normal, exclusive or batch\n"},
        {{"--bogus", "--", "/bin/true"},
         "arbrun: unknown option '--bogus'; see 'arbrun --help' for the options\n"},
        {{"--cores", "2"},
         "arbrun: no program given; usage: arbrun [options] -- program [args] (see arbrun "
         "--help)\n"},
        {{"--standalone", "--arbiter", "/x.sock", "--", "/bin/true"},
         "arbrun: --standalone and --arbiter exclude each other (standalone mode contacts no "
         "arbiter); give one of them\n"},
        {{"--dispatch", "lifo", "--", "/bin/true"},
         "arbrun: --dispatch: 'lifo' is not valid: unknown dispatch; expected fifo or cohort\n"},
        {{"--cohort-max", "0", "--", "/bin/true"},
         "arbrun: --cohort-max: '0' is not valid; expected an integer from 1 to 1024\n"},
        {{"--cohort-max-us", "2000000", "--", "/bin/true"},
         "arbrun: --cohort-max-us: '2000000' is not valid; expected microseconds from 1 to "
         "1000000\n"},
        {{"ab", "-n", "0", "--", "/bin/true"},
         "arbrun: -n: '0' is not valid; expected an integer from 1 to 1000\n"},
        {{"ab", "--priority", "8", "/bin/true"},
         "arbrun: --priority: '8' is not valid; expected an integer from 0 (highest) to 7 "
         "(lowest)\n"},
        {{"ab", "-n", "2"},
         "arbrun: no program given; usage: arbrun ab [-n RUNS] [options] -- program [args] (see "
         "arbrun ab --help)\n"},
        {{"doctor", "--cores", "2"},
         "arbrun: unknown option '--cores'; see 'arbrun doctor --help' for the options\n"},
        {{"doctor", "now"},
         "arbrun: unexpected argument 'now'; usage: arbrun doctor [--arbiter PATH] (see arbrun "
         "doctor --help)\n"},
    };
    for (const auto& c : cases) {
        const Result r = arbrun(c.args);
        EXPECT_EQ(exitCode(r), 2) << c.message;
        EXPECT_EQ(r.err, c.message);
        EXPECT_EQ(r.out, "");
    }
}

TEST_F(Launcher, MissingProgramIs127) {
    const Result r = arbrun({"--", "no-such-program-arbrun-test"});
    EXPECT_EQ(exitCode(r), 127);
    EXPECT_EQ(r.err,
              "arbrun: cannot run 'no-such-program-arbrun-test': No such file or directory\n");
}

TEST_F(Launcher, NonExecutableProgramIs126) {
    const std::string script = dir_.touch("not-executable", 0644);
    const Result r = arbrun({"--", script});
    EXPECT_EQ(exitCode(r), 126);
    EXPECT_EQ(r.err, "arbrun: cannot run '" + script + "': Permission denied\n");
}

TEST_F(Launcher, MissingPreloadLibraryIsTwo) {
    env_["ARBRUN_PRELOAD_LIB"] = (dir_.path() / "missing.so").string();
    const Result r = arbrun({"--", "/bin/true"});
    EXPECT_EQ(exitCode(r), 2);
    EXPECT_EQ(r.err, "arbrun: preload library " + env_["ARBRUN_PRELOAD_LIB"] +
                         " not found (No such file or directory); check ARBRUN_PRELOAD_LIB\n");
}

// Without the override the library is found from the executable's own location: the installed
// layout (installedPreloadRelPath(), e.g. ../lib/arbrun/libarbrun.so) first, then the build tree's
// ../lib/libarbrun.so. A copy of the binary in a private bin/ directory finds (or misses) them.
TEST_F(Launcher, FindsLibraryBesideItsExecutable) {
    const fs::path bin = dir_.path() / "tree" / "bin" / "arbrun";
    fs::create_directories(bin.parent_path());
    fs::copy_file(ARBRUN_BINARY, bin);
    env_.erase("ARBRUN_PRELOAD_LIB");
    const std::string installed =
        (bin.parent_path() / arbrun::installedPreloadRelPath()).lexically_normal().string();
    const std::string expected = (dir_.path() / "tree" / "lib" / "libarbrun.so").string();

    Result r = run({bin.string(), "--", "/bin/true"}, env_);
    EXPECT_EQ(exitCode(r), 2);
    EXPECT_EQ(r.err, "arbrun: preload library " + installed +
                         " not found (No such file or directory), nor " + expected +
                         "; build it (cmake --build build), install it (cmake --install build) "
                         "or set ARBRUN_PRELOAD_LIB to its path\n");

    dir_.touch("tree/lib/libarbrun.so");
    r = run({bin.string(), "--", "/usr/bin/env"}, env_);
    ASSERT_EQ(exitCode(r), 0) << r.err;
    EXPECT_EQ(parseEnvOutput(r.out).at("LD_PRELOAD"), expected);
}

// An installed tree: the private library directory wins over a libarbrun.so in the prefix's lib/.
TEST_F(Launcher, PrefersTheInstalledLayout) {
    const fs::path bin = dir_.path() / "prefix" / "bin" / "arbrun";
    fs::create_directories(bin.parent_path());
    fs::copy_file(ARBRUN_BINARY, bin);
    env_.erase("ARBRUN_PRELOAD_LIB");
    const fs::path installed =
        (bin.parent_path() / arbrun::installedPreloadRelPath()).lexically_normal();
    dir_.touch(fs::relative(installed, dir_.path()).string());
    dir_.touch("prefix/lib/libarbrun.so");

    const Result r = run({bin.string(), "--", "/usr/bin/env"}, env_);
    ASSERT_EQ(exitCode(r), 0) << r.err;
    EXPECT_EQ(parseEnvOutput(r.out).at("LD_PRELOAD"), installed.string());
}

TEST_F(Launcher, HelpAndVersionExitZero) {
    Result r = arbrun({"--help"});
    EXPECT_EQ(exitCode(r), 0);
    EXPECT_NE(r.out.find("Usage: arbrun [options] [--] program [args...]"), std::string::npos);
    EXPECT_NE(r.out.find("Exit status:"), std::string::npos);
    EXPECT_NE(r.out.find("arbrun doctor [--arbiter PATH]"), std::string::npos);
    EXPECT_NE(r.out.find("arbrun ab [-n RUNS] [options] [--] program [args...]"),
              std::string::npos);
    for (const char* subcommand : {"doctor", "ab"}) {
        r = arbrun({subcommand, "--help"});
        EXPECT_EQ(exitCode(r), 0) << subcommand;
        EXPECT_EQ(r.out.rfind(std::string("Usage: arbrun ") + subcommand, 0), 0u) << r.out;
    }
    r = arbrun({"--version"});
    EXPECT_EQ(exitCode(r), 0);
    EXPECT_EQ(r.out.rfind("arbrun ", 0), 0u);
}

TEST_F(Launcher, VerboseDescribesTheEnvironment) {
    const Result r = arbrun({"--verbose", "--cores", "2", "--", "/bin/true"});
    EXPECT_EQ(exitCode(r), 0);
    EXPECT_NE(r.err.find("arbrun: running '/bin/true' with ARBRUN_CORES=2 ARBRUN_PRIORITY=3"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find(" LD_PRELOAD=" + lib_), std::string::npos) << r.err;
}

// A statically linked program never loads the preload library: arbrun says so in one line before
// it execs it (Debian's ldconfig is static-pie), and the program's exit status is its own.
TEST_F(Launcher, StaticallyLinkedProgramIsAnnounced) {
    std::string ldconfig;
    for (const char* p : {"/usr/sbin/ldconfig", "/sbin/ldconfig"}) {
        if (access(p, X_OK) == 0) ldconfig = p;
    }
    if (ldconfig.empty()) GTEST_SKIP() << "no ldconfig, the static program this test runs";
    const Result r = arbrun({"--standalone", "--", ldconfig, "--version"});
    EXPECT_EQ(exitCode(r), 0) << r.err;
    EXPECT_EQ(r.err, "arbrun: " + ldconfig +
                         " is statically linked (the preload library cannot load into it); "
                         "running it natively\n");
}

// The check for Go costs a dynamically linked non-Go program nothing visible: the runtime starts
// and nothing more is said.
TEST_F(Launcher, DynamicNonGoProgramRunsUnderTheRuntime) {
    if (!kRealPreloadUsable) GTEST_SKIP() << "the real preload library is instrumented here";
    env_["ARBRUN_PRELOAD_LIB"] = ARBRUN_PRELOAD_LIBRARY;
    const Result r = arbrun({"--standalone", "--verbose", "--", "/bin/true"});
    EXPECT_EQ(exitCode(r), 0) << r.err;
    EXPECT_NE(r.err.find("arbrun: runtime started with "), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("Go program"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("natively"), std::string::npos) << r.err;
}

// A process-directed SIGSYS (the signal syscall user dispatch uses) sent to a program that never
// set its disposition ends it as natively, killed by SIGSYS. Here it arrives while a thread other
// than main() runs (one core, held by spin_and_join's computing thread), so the library hands it
// to main() (the kernel's choice), which has no helper thread to do that in a program that never
// touched signals: it acts on the disposition itself. (A program started under arbrun whose
// signal then stayed pending would compute on until the test's deadline.)
TEST_F(Launcher, SigsysKillWhileAnotherThreadRunsEndsTheProgramAsNatively) {
    if (!kRealPreloadUsable) GTEST_SKIP() << "the real preload library is instrumented here";
    env_["ARBRUN_PRELOAD_LIB"] = ARBRUN_PRELOAD_LIBRARY;
    std::vector<std::string> envStrings;
    for (const auto& [k, v] : env_) envStrings.push_back(k + "=" + v);
    for (const bool underArbrun : {false, true}) {
        const char* how = underArbrun ? "under arbrun" : "natively";
        std::vector<std::string> argv = {SPIN_AND_JOIN_BINARY};
        if (underArbrun)
            argv.insert(argv.begin(), {ARBRUN_BINARY, "--cores", "1", "--standalone", "--"});
        std::vector<char*> argp, envp;
        for (const auto& a : argv) argp.push_back(const_cast<char*>(a.c_str()));
        for (const auto& e : envStrings) envp.push_back(const_cast<char*>(e.c_str()));
        argp.push_back(nullptr);
        envp.push_back(nullptr);
        int out[2];
        ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
        const pid_t parent = getpid();
        const pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) _exit(99);
            dup2(out[1], 1);
            const rlimit noCore{0, 0};  // SIGSYS dumps core by default: leave no file behind
            setrlimit(RLIMIT_CORE, &noCore);
            execve(argp[0], argp.data(), envp.data());
            _exit(97);
        }
        close(out[1]);
        std::string line;
        char c;
        pollfd p{out[0], POLLIN, 0};
        while (line.find('\n') == std::string::npos && poll(&p, 1, 15'000) == 1 &&
               read(out[0], &c, 1) == 1) {
            line += c;
        }
        close(out[0]);
        EXPECT_EQ(line, "spinning\n") << how;
        ASSERT_EQ(kill(pid, SIGSYS), 0);
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);  // alarm(20) ends a program that missed it
        EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS)
            << how << ": status " << status;
    }
}

// A tracer under arbrun: the requests that start a trace fail with EPERM and one line says why,
// instead of the hang strace ran into (its child became a traced carrier while strace waited for
// the process). Natively the same tracer works, which this test checks first: where the machine
// forbids tracing (Yama, a container's seccomp profile), there is nothing to compare with.
TEST_F(Launcher, TracerIsRefusedInOneLineInsteadOfHanging) {
    if (!kRealPreloadUsable) GTEST_SKIP() << "the real preload library is instrumented here";
    for (const char* mode : {"traceme", "traceme-raw", "attach"}) {
        const Result native = run({TRACE_CHILD_BINARY, mode}, baseEnv());
        if (exitCode(native) != 0) GTEST_SKIP() << "tracing is not allowed here (" << mode << ")";
    }
    env_["ARBRUN_PRELOAD_LIB"] = ARBRUN_PRELOAD_LIBRARY;
    // Through libc's ptrace, then through syscall(SYS_ptrace): the same refusal.
    for (const char* mode : {"traceme", "traceme-raw"}) {
        const Result traceme = arbrun({"--standalone", "--", TRACE_CHILD_BINARY, mode});
        EXPECT_EQ(exitCode(traceme), 3) << mode << ": " << traceme.err;  // the child's EPERM
        EXPECT_EQ(traceme.err, "arbrun: " TRACE_CHILD_BINARY
                               ": ptrace(PTRACE_TRACEME) refused: the kernel ties a trace to one "
                               "kernel thread, and under arbrun a program's threads move between "
                               "kernel threads; run the tracer without arbrun (it can trace a "
                               "program that runs under arbrun: strace -f arbrun -- PROGRAM)\n")
            << mode;
    }
    const Result attach = arbrun({"--standalone", "--", TRACE_CHILD_BINARY, "attach"});
    EXPECT_EQ(exitCode(attach), 4) << attach.err;
    EXPECT_NE(attach.err.find("ptrace(PTRACE_ATTACH) refused"), std::string::npos) << attach.err;
    EXPECT_EQ(std::count(attach.err.begin(), attach.err.end(), '\n'), 1) << attach.err;
}

// --- arbrun doctor -------------------------------------------------------------------------

// The report's lines that start with a verdict, by check name; fails the test on a malformed one.
std::map<std::string, std::string> doctorLines(const std::string& out) {
    std::map<std::string, std::string> lines;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("arbrun doctor: ", 0) == 0) continue;
        std::istringstream words(line);
        std::string verdict, name;
        words >> verdict >> name;
        EXPECT_TRUE(verdict == "OK" || verdict == "WARN" || verdict == "FAIL") << line;
        EXPECT_EQ(lines.count(name), 0u) << "twice: " << name;
        lines[name] = line;
    }
    return lines;
}

// The real binary with the real preload library: every check has its line, the arbiter line says
// what happens without one, and the exit status follows the FAIL lines (which depend on the host).
TEST_F(Launcher, DoctorPrintsEveryCheck) {
    if (kRealPreloadUsable) env_["ARBRUN_PRELOAD_LIB"] = ARBRUN_PRELOAD_LIBRARY;
    const std::string socket = (dir_.path() / "none.sock").string();
    const Result r = arbrun({"doctor", "--arbiter", socket});
    const auto lines = doctorLines(r.out);
    for (const char* name : {"fsgsbase", "glibc", "syscalls", "cgroups", "moves", "root", "arbiter",
                             "preload", "runtimes"}) {
        EXPECT_EQ(lines.count(name), 1u) << name << "\n" << r.out;
    }
    EXPECT_EQ(lines.at("arbiter").rfind("WARN  arbiter   not running at " + socket +
                                            " (No such file or directory): arbrun will run "
                                            "standalone",
                                        0),
              0u)
        << r.out;
    const bool failed = r.out.find("\nFAIL ") != std::string::npos || r.out.rfind("FAIL ", 0) == 0;
    EXPECT_EQ(exitCode(r), failed ? 1 : 0) << r.out;
    EXPECT_NE(r.out.find("\narbrun doctor: "), std::string::npos) << r.out;
    EXPECT_EQ(r.err, "");
    // The glibc line comes from the runtime inside the trial program (the launcher is static):
    // the version is the one this (dynamically linked) test loaded.
    if (kRealPreloadUsable) {
        const std::string version = gnu_get_libc_version();
        EXPECT_EQ(lines.at("glibc").find(std::string("glibc     ") + version + ": "), 6u)
            << lines.at("glibc");
    }
    // The library works wherever the runtime's glibc probe accepts the host.
    if (kRealPreloadUsable && lines.at("glibc").rfind("OK", 0) == 0) {
        EXPECT_EQ(lines.at("preload"), std::string("OK    preload   ") + ARBRUN_PRELOAD_LIBRARY +
                                           ": /bin/true ran under LD_PRELOAD and the runtime "
                                           "started");
    }
}

// The fixture's library is an empty file: ld.so refuses it, which is a FAIL and exit status 1.
TEST_F(Launcher, DoctorFailsOnAnUnloadablePreloadLibrary) {
    const Result r = arbrun({"doctor", "--arbiter", (dir_.path() / "none.sock").string()});
    EXPECT_EQ(exitCode(r), 1) << r.out;
    const std::string line = doctorLines(r.out)["preload"];
    EXPECT_EQ(line.rfind("FAIL  preload   " + lib_ + ": /bin/true under LD_PRELOAD failed (", 0),
              0u)
        << line;
    EXPECT_NE(line.find("cannot be preloaded"), std::string::npos) << line;
}

TEST_F(Launcher, DoctorFailsOnAMissingPreloadLibrary) {
    env_["ARBRUN_PRELOAD_LIB"] = (dir_.path() / "missing.so").string();
    const Result r = arbrun({"doctor", "--arbiter", (dir_.path() / "none.sock").string()});
    EXPECT_EQ(exitCode(r), 1) << r.out;
    const auto lines = doctorLines(r.out);
    EXPECT_EQ(lines.at("preload"),
              "FAIL  preload   preload library " + env_["ARBRUN_PRELOAD_LIB"] +
                  " not found (No such file or directory); check ARBRUN_PRELOAD_LIB");
    // Without a library no program can report the platform: not checked, not guessed.
    EXPECT_EQ(lines.at("glibc"),
              "WARN  glibc     not checked: the preload library was not found (see the preload "
              "line)");
    EXPECT_EQ(lines.at("syscalls"),
              "WARN  syscalls  not checked: the preload library was not found (see the preload "
              "line)");
}

// core-arbiter on its fake backend (nothing pinned), started by this test and stopped with it.
// Ready once it logs "listening on" (after its socket listens): read from its stderr, no polling.
class FakeArbiter {
  public:
    FakeArbiter(const fs::path& dir) : socket_((dir / "arbiter.sock").string()) {
        int err[2];
        if (pipe2(err, O_CLOEXEC) != 0) return;
        const std::string root = (dir / "cgroup").string();
        std::vector<std::string> args = {ARBITER_BINARY,  "--socket", socket_,  "--backend", "fake",
                                         "--cgroup-root", root,       "--cpus", "0-3"};
        const pid_t parent = getpid();
        pid_ = fork();
        if (pid_ == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) _exit(99);
            dup2(err[1], 2);
            std::vector<char*> argv;
            for (auto& a : args) argv.push_back(a.data());
            argv.push_back(nullptr);
            execv(argv[0], argv.data());
            _exit(127);
        }
        close(err[1]);
        stderr_ = err[0];
        ready_ = pid_ > 0 && waitForLine("listening on");
    }
    ~FakeArbiter() {
        if (pid_ > 0) {
            kill(pid_, SIGTERM);
            waitpid(pid_, nullptr, 0);
        }
        if (stderr_ >= 0) close(stderr_);
    }
    bool ready() const { return ready_; }
    const std::string& socket() const { return socket_; }
    const std::string& log() const { return log_; }

  private:
    // Reads its stderr until `text` appears, it exits, or a safety deadline passes.
    bool waitForLine(const std::string& text) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (log_.find(text) == std::string::npos) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            pollfd p{stderr_, POLLIN, 0};
            if (left.count() <= 0 || poll(&p, 1, int(left.count())) <= 0) return false;
            char buf[512];
            const ssize_t n = read(stderr_, buf, sizeof buf);
            if (n <= 0) return false;
            log_.append(buf, size_t(n));
        }
        return true;
    }

    std::string socket_, log_;
    pid_t pid_ = -1;
    int stderr_ = -1;
    bool ready_ = false;
};

TEST_F(Launcher, DoctorTalksToARunningArbiter) {
    FakeArbiter arbiter(dir_.path());
    ASSERT_TRUE(arbiter.ready()) << arbiter.log();
    const Result r = arbrun({"doctor", "--arbiter", arbiter.socket()});
    // As root the arbiter lowered its niceness to its default (-10); otherwise it kept this
    // process's, and the doctor says what that costs.
    const int own = getpriority(PRIO_PROCESS, 0);
    const std::string line = doctorLines(r.out)["arbiter"];
    const int expected = geteuid() == 0 ? -10 : own;
    if (expected < 0) {
        EXPECT_EQ(line, "OK    arbiter   running at " + arbiter.socket() +
                            ": 3 managed cores, 0 processes, niceness " + std::to_string(expected) +
                            "; arbrun gets its cores from it")
            << r.out;
    } else {
        EXPECT_EQ(line.rfind("WARN  arbiter   running at " + arbiter.socket() +
                                 ": 3 managed cores, 0 processes; arbrun gets its cores from it, "
                                 "but at niceness " +
                                 std::to_string(expected),
                             0),
                  0u)
            << r.out;
    }
}

// --- arbrun ab -----------------------------------------------------------------------------

// Names in `dir` (empty when it holds nothing).
std::vector<std::string> entries(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename());
    return names;
}

// --trace: a path that cannot be written is a usage error before the program runs; a good one
// gets the CSV timeline (header, start, a grant per core, utilisation rows while it runs).
TEST_F(Launcher, TraceUnwritablePathIsTwo) {
    const std::string bad = (dir_.path() / "no-such-dir" / "t.csv").string();
    const Result r = arbrun({"--trace", bad, "--", "/bin/true"});
    EXPECT_EQ(exitCode(r), 2);
    EXPECT_EQ(r.err, "arbrun: --trace: cannot write '" + bad + "': No such file or directory\n");
}

TEST_F(Launcher, TraceWritesTheCoreTimeline) {
    if (!kRealPreloadUsable) GTEST_SKIP() << "the sanitizer build's preload library cannot run";
    env_["ARBRUN_PRELOAD_LIB"] = ARBRUN_PRELOAD_LIBRARY;
    const std::string trace = (dir_.path() / "t.csv").string();
    const Result r =
        arbrun({"--standalone", "--cores", "2", "--trace", trace, "--", "/bin/sleep", "0.1"});
    ASSERT_EQ(exitCode(r), 0) << r.err;
    std::ifstream in(trace);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    ASSERT_GE(lines.size(), 5u);
    EXPECT_EQ(lines[0], "time_s,event,core,cpu,value");
    EXPECT_NE(lines[1].find(",start,-1,-1,2"), std::string::npos) << lines[1];
    EXPECT_NE(lines[2].find(",grant,0,-1,1"), std::string::npos) << lines[2];
    EXPECT_NE(lines[3].find(",grant,1,-1,1"), std::string::npos) << lines[3];
    int utilRows = 0;
    for (const std::string& line : lines) utilRows += line.find(",util,") != std::string::npos;
    EXPECT_GE(utilRows, 2) << "a 100 ms run samples every ~10 ms";
}

TEST_F(Launcher, AbComparesNativeAndArbrunRuns) {
    if (kRealPreloadUsable) env_["ARBRUN_PRELOAD_LIB"] = ARBRUN_PRELOAD_LIBRARY;
    const fs::path scratch = dir_.path() / "scratch";
    fs::create_directory(scratch);
    env_["TMPDIR"] = scratch.string();
    const Result r = arbrun({"ab", "-n", "2", "--standalone", "--", "/bin/echo", "hello"});
    EXPECT_EQ(exitCode(r), 0) << r.out << r.err;
    EXPECT_EQ(r.out.rfind("arbrun ab: '/bin/echo', 2 runs per mode, medians\n"
                          "                  native      arbrun  arbrun/native\n"
                          "wall time   ",
                          0),
              0u)
        << r.out;
    EXPECT_NE(r.out.find("\nCPU time    "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\npeak RSS    "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("x\noutputs match: stdout and exit status (exit 0) identical in all 4 "
                         "runs\n"),
              std::string::npos)
        << r.out;
    for (const char* run : {"run 1/4 (native #1): ", "run 2/4 (arbrun #1): ",
                            "run 3/4 (native #2): ", "run 4/4 (arbrun #2): "}) {
        EXPECT_NE(r.err.find(std::string("arbrun ab: ") + run), std::string::npos) << run << "\n"
                                                                                   << r.err;
    }
    EXPECT_EQ(r.out.find("hello"), std::string::npos) << "the program's stdout is captured";
    EXPECT_TRUE(entries(scratch).empty()) << "temporary files left behind";
}

// The arbrun runs see ARBRUN_CORES, the native ones do not: stdout and exit status differ.
TEST_F(Launcher, AbNamesTheRunThatDiffered) {
    const Result r = arbrun({"ab", "-n", "1", "--", "/bin/sh", "-c",
                             "echo \"$ARBRUN_CORES\"; test -z \"$ARBRUN_CORES\""});
    EXPECT_EQ(exitCode(r), 1) << r.out << r.err;
    EXPECT_NE(r.out.find("outputs differ from run 1 (native #1, exit 0):\n"
                         "  run 2 (arbrun #1): stdout differs; exit 1\n"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.err.find("stdout DIFFERS, exit status DIFFERS"), std::string::npos) << r.err;
}

TEST_F(Launcher, AbMissingProgramIs127) {
    const Result r = arbrun({"ab", "--", "no-such-program-arbrun-test"});
    EXPECT_EQ(exitCode(r), 127);
    EXPECT_EQ(r.err,
              "arbrun: cannot run 'no-such-program-arbrun-test': No such file or directory\n");
    EXPECT_EQ(r.out, "");
}

TEST_F(Launcher, AbMissingPreloadLibraryIsTwo) {
    env_["ARBRUN_PRELOAD_LIB"] = (dir_.path() / "missing.so").string();
    const Result r = arbrun({"ab", "--", "/bin/true"});
    EXPECT_EQ(exitCode(r), 2);
    EXPECT_EQ(r.err, "arbrun: preload library " + env_["ARBRUN_PRELOAD_LIB"] +
                         " not found (No such file or directory); check ARBRUN_PRELOAD_LIB\n");
}

}  // namespace
