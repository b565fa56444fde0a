// applyOwnNice (own_priority.h) through a FaultySys, which records the change instead of making
// it: lowered when allowed, left alone when already there, a refusal a one-line warning. The real
// kernel call is covered end to end (integration_test.cc: Nice_*).
#include "own_priority.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "faulty_sys.h"
#include "log.h"

namespace arbd {
namespace {

class OwnPriorityTest : public ::testing::Test {
  protected:
    void SetUp() override { setLogLevel(LogLevel::kWarn); }
    void TearDown() override { setLogLevel(LogLevel::kError); }
    // applyOwnNice(nice) with stderr captured into *log.
    int apply(int nice, std::string* log) {
        ::testing::internal::CaptureStderr();
        const int e = applyOwnNice(sys_, nice);
        *log = ::testing::internal::GetCapturedStderr();
        return e;
    }
    std::unique_ptr<Sys> real_ = makeRealSys();
    arbtest::FaultySys sys_{*real_};
};

TEST_F(OwnPriorityTest, ApplyOwnNice_LowersItWhenAllowed) {
    std::string log;
    EXPECT_EQ(apply(-10, &log), 0);
    EXPECT_EQ(sys_.niceCalls, std::vector<int>{-10});
    EXPECT_EQ(log, "");  // the change itself is an info line, below this test's level
}

TEST_F(OwnPriorityTest, ApplyOwnNice_AlreadyThere_ChangesNothing) {
    sys_.ownNice = -10;
    std::string log;
    EXPECT_EQ(apply(-10, &log), 0);
    EXPECT_TRUE(sys_.niceCalls.empty());
    EXPECT_EQ(log, "");
}

TEST_F(OwnPriorityTest, ApplyOwnNice_Refused_OneWarningNamingTheCapabilityAndTheWayOut) {
    sys_.ownNice = 5;
    sys_.fail("setnice", "", EPERM);
    std::string log;
    EXPECT_EQ(apply(-10, &log), EPERM);
    EXPECT_EQ(sys_.ownNice, 5);
    EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
    EXPECT_EQ(log.rfind("core-arbiter: warn: ", 0), 0u) << log;
    EXPECT_NE(log.find("from 5 to -10"), std::string::npos) << log;
    EXPECT_NE(log.find("CAP_SYS_NICE"), std::string::npos) << log;
    EXPECT_NE(log.find("--nice 5 keeps"), std::string::npos) << log;
}

TEST_F(OwnPriorityTest, ApplyOwnNice_UnreadableNiceness_WarnsAndChangesNothing) {
    sys_.fail("getnice", "", ENOSYS);
    std::string log;
    EXPECT_EQ(apply(-10, &log), ENOSYS);
    EXPECT_TRUE(sys_.niceCalls.empty());
    EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
    EXPECT_NE(log.find("--nice -10 not applied"), std::string::npos) << log;
}

TEST_F(OwnPriorityTest, ApplyOwnNice_RaisingIt_IsAlsoApplied) {
    sys_.ownNice = -5;
    std::string log;
    EXPECT_EQ(apply(10, &log), 0);
    EXPECT_EQ(sys_.niceCalls, std::vector<int>{10});
}

}  // namespace
}  // namespace arbd
