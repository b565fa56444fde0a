// core-arbiter's command line parsed and resolved in-process (parseOptions, resolveOptions): the
// --share-period, --release-poll and --nice options' defaults, accepted values and errors. The
// other options are covered end to end by the integration tests
// (Daemon_BadOptionsExitTwoWithOneLine).
#include <gtest/gtest.h>

#include <algorithm>

#include "log.h"
#include "options.h"
#include "test_support.h"

namespace arbd {
namespace {

using namespace std::chrono_literals;

// argv for parseOptions from strings (CLI11 does not modify them; argv is char** by convention).
class Argv {
  public:
    explicit Argv(std::vector<std::string> args) : args_(std::move(args)) {
        args_.insert(args_.begin(), "core-arbiter");
        for (auto& a : args_) pointers_.push_back(a.data());
        pointers_.push_back(nullptr);
    }
    int argc() const { return static_cast<int>(args_.size()); }
    char** argv() { return pointers_.data(); }

  private:
    std::vector<std::string> args_;
    std::vector<char*> pointers_;
};

class OptionsTest : public ::testing::Test {
  protected:
    void SetUp() override { setLogLevel(LogLevel::kError); }
    // Parses args (after a fake-backend base) and resolves them; returns the parse status (-1 = go
    // on) and, on -1, fills settings (failing the test when resolving fails).
    int parse(std::vector<std::string> args, Settings* settings, std::string* errors = nullptr) {
        args.insert(args.begin(), {"--backend", "fake", "--cgroup-root", dir_ / "cg", "--cpus",
                                   "0-3", "--socket", dir_ / "sock"});
        Argv argv(args);
        Options options;
        ::testing::internal::CaptureStderr();
        int status = parseOptions(argv.argc(), argv.argv(), &options);
        std::string err = ::testing::internal::GetCapturedStderr();
        if (errors) *errors = err;
        if (status != -1) return status;
        std::string why;
        EXPECT_TRUE(resolveOptions(options, *sys_, settings, &why)) << why;
        return status;
    }
    // Each bad value of `option` (and the option without one) is refused with exit status 2 and
    // one line that starts with the program's name and names the option.
    void expectRefused(const std::string& option, const std::vector<std::string>& badValues) {
        for (const std::string& bad : badValues) {
            Settings s;
            std::string errors;
            EXPECT_EQ(parse({option, bad}, &s, &errors), 2) << bad;
            EXPECT_EQ(errors.rfind("core-arbiter: ", 0), 0u) << bad << ": " << errors;
            EXPECT_NE(errors.find(option), std::string::npos) << bad << ": " << errors;
            EXPECT_EQ(std::count(errors.begin(), errors.end(), '\n'), 1) << bad << ": " << errors;
        }
        std::string errors;
        Settings s;
        EXPECT_EQ(parse({option}, &s, &errors), 2);
        EXPECT_NE(errors.find(option), std::string::npos) << errors;
    }
    // What --help prints (exit status 0).
    static std::string helpText() {
        Argv argv({"--help"});
        Options options;
        ::testing::internal::CaptureStdout();
        EXPECT_EQ(parseOptions(argv.argc(), argv.argv(), &options), 0);
        return ::testing::internal::GetCapturedStdout();
    }
    arbtest::TempDir dir_;
    std::unique_ptr<Sys> sys_ = makeRealSys();
};

TEST_F(OptionsTest, Defaults_SharePeriod100msReleasePoll200usNiceMinus10) {
    Settings s;
    ASSERT_EQ(parse({}, &s), -1);
    EXPECT_EQ(s.sharePeriod, 100ms);
    EXPECT_EQ(s.releasePoll, 200us);
    EXPECT_EQ(s.nice, -10);
}

TEST_F(OptionsTest, SharePeriod_AcceptsZeroAndMilliseconds) {
    Settings s;
    ASSERT_EQ(parse({"--share-period", "0"}, &s), -1);
    EXPECT_EQ(s.sharePeriod, 0ms);
    ASSERT_EQ(parse({"--share-period", "250"}, &s), -1);
    EXPECT_EQ(s.sharePeriod, 250ms);
    ASSERT_EQ(parse({"--share-period=60000"}, &s), -1);
    EXPECT_EQ(s.sharePeriod, 60000ms);
}

TEST_F(OptionsTest, SharePeriod_BadValuesAreOneLineErrors) {
    expectRefused("--share-period", {"-1", "60001", "abc", "1.5", "", "100ms"});
}

TEST_F(OptionsTest, Help_DocumentsSharePeriod) {
    const std::string help = helpText();
    EXPECT_NE(help.find("--share-period"), std::string::npos) << help;
    EXPECT_NE(help.find("0 = never"), std::string::npos) << help;
}

TEST_F(OptionsTest, ReleasePoll_AcceptsZeroAndMicroseconds) {
    Settings s;
    ASSERT_EQ(parse({"--release-poll", "0"}, &s), -1);
    EXPECT_EQ(s.releasePoll, 0us);
    ASSERT_EQ(parse({"--release-poll=10000"}, &s), -1);
    EXPECT_EQ(s.releasePoll, 10000us);
}

TEST_F(OptionsTest, ReleasePoll_BadValuesAreOneLineErrors) {
    expectRefused("--release-poll", {"-1", "10001", "abc", "0.5", "", "200us"});
}

TEST_F(OptionsTest, Help_DocumentsReleasePoll) {
    const std::string help = helpText();
    EXPECT_NE(help.find("--release-poll"), std::string::npos) << help;
    EXPECT_NE(help.find("0 = sleep at once"), std::string::npos) << help;
}

TEST_F(OptionsTest, Nice_AcceptsTheWholeRange) {
    Settings s;
    for (int n : {-20, 0, 19}) {
        ASSERT_EQ(parse({"--nice", std::to_string(n)}, &s), -1) << n;
        EXPECT_EQ(s.nice, n);
    }
    ASSERT_EQ(parse({"--nice=-3"}, &s), -1);
    EXPECT_EQ(s.nice, -3);
}

TEST_F(OptionsTest, Nice_BadValuesAreOneLineErrors) {
    expectRefused("--nice", {"-21", "20", "abc", "1.5", "", "-"});
}

TEST_F(OptionsTest, Help_DocumentsNice) {
    const std::string help = helpText();
    EXPECT_NE(help.find("--nice"), std::string::npos) << help;
    EXPECT_NE(help.find("CAP_SYS_NICE"), std::string::npos) << help;
}

}  // namespace
}  // namespace arbd
