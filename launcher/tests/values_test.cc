// The scalar option parsers: every accepted form, every kind of bad value, and the shape of the
// error (one line, naming the option, quoting the value and the accepted form).
#include <arbconfig/config.h>
#include <gtest/gtest.h>

#include <string>

namespace arbconfig {
namespace {

// An error is one line that starts with the option's name and ends with the accepted form.
void expectErrorShape(const std::string& error, std::string_view option, std::string_view form) {
    EXPECT_EQ(error.rfind(std::string(option) + ": ", 0), 0u) << error;
    EXPECT_NE(error.find("; expected " + std::string(form)), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(ParseCores, SingleNumberMeansExactly) {
    Config c;
    std::string error;
    ASSERT_TRUE(parseCores("4", &c, &error)) << error;
    EXPECT_EQ(c.minCores, 4u);
    EXPECT_EQ(c.maxCores, 4u);
}

TEST(ParseCores, RangeAndOpenRange) {
    Config c;
    ASSERT_TRUE(parseCores("2:8", &c, nullptr));
    EXPECT_EQ(c.minCores, 2u);
    EXPECT_EQ(c.maxCores, 8u);
    ASSERT_TRUE(parseCores("3:", &c, nullptr));
    EXPECT_EQ(c.minCores, 3u);
    EXPECT_EQ(c.maxCores, 0u);
    ASSERT_TRUE(parseCores("1:256", &c, nullptr));
    EXPECT_EQ(c.maxCores, 256u);
    ASSERT_TRUE(parseCores("5:5", &c, nullptr));
    EXPECT_EQ(c.minCores, 5u);
    EXPECT_EQ(c.maxCores, 5u);
    ASSERT_TRUE(parseCores("007", &c, nullptr));
    EXPECT_EQ(c.minCores, 7u);
}

TEST(ParseCores, RejectsEveryKindOfBadValue) {
    for (const char* bad :
         {"",    "0",  "0:4", "4:2", "257", "1:257", "-1",    "+2",  " 2",
          "2 ",  "2x", "x",   ":",   ":4",  "2::4",  "2:4:6", "1.5", "99999999999999999999",
          "2-4", "0:"}) {
        Config c;
        c.minCores = 9;
        c.maxCores = 11;
        std::string error;
        EXPECT_FALSE(parseCores(bad, &c, &error)) << "'" << bad << "'";
        expectErrorShape(error, "--cores", kCoresForm);
        EXPECT_NE(error.find(std::string(1, '\'').append(bad).append(1, '\'')), std::string::npos)
            << error;
        EXPECT_EQ(c.minCores, 9u) << "output changed on error";
        EXPECT_EQ(c.maxCores, 11u);
    }
}

TEST(ParseCores, ReasonForReversedRange) {
    Config c;
    std::string error;
    ASSERT_FALSE(parseCores("4:2", &c, &error));
    EXPECT_EQ(error,
              "--cores: '4:2' is not valid: MIN exceeds MAX; expected N, MIN:MAX or MIN: with 1 "
              "<= MIN <= MAX <= 256");
}

TEST(ParseCores, NullErrorIsAllowed) {
    Config c;
    EXPECT_FALSE(parseCores("0", &c, nullptr));
}

TEST(ParsePriority, AcceptsZeroToSeven) {
    for (int p = 0; p <= 7; ++p) {
        Config c;
        ASSERT_TRUE(parsePriority(std::to_string(p), &c, nullptr));
        EXPECT_EQ(c.priority, p);
    }
}

TEST(ParsePriority, RejectsEveryKindOfBadValue) {
    for (const char* bad :
         {"", "8", "-1", "+1", "1 ", "one", "1.0", "0x1", "18446744073709551616"}) {
        Config c;
        std::string error;
        EXPECT_FALSE(parsePriority(bad, &c, &error)) << bad;
        expectErrorShape(error, "--priority", kPriorityForm);
        EXPECT_EQ(c.priority, 3);
    }
}

TEST(ParseThreadClass, AcceptsTheThreeClasses) {
    ThreadClass t = ThreadClass::batch;
    ASSERT_TRUE(parseThreadClass("normal", &t, nullptr));
    EXPECT_EQ(t, ThreadClass::normal);
    ASSERT_TRUE(parseThreadClass("exclusive", &t, nullptr));
    EXPECT_EQ(t, ThreadClass::exclusive);
    ASSERT_TRUE(parseThreadClass("batch", &t, nullptr));
    EXPECT_EQ(t, ThreadClass::batch);
}

TEST(ParseThreadClass, RejectsUnknownNames) {
    for (const char* bad : {"", "Normal", "BATCH", "exclusive ", "idle", "norm"}) {
        ThreadClass t = ThreadClass::exclusive;
        std::string error;
        EXPECT_FALSE(parseThreadClass(bad, &t, &error)) << bad;
        expectErrorShape(error, "--default-class", kThreadClassForm);
        EXPECT_EQ(t, ThreadClass::exclusive);
    }
}

TEST(ThreadClassName, RoundTripsThroughParser) {
    for (auto t : {ThreadClass::normal, ThreadClass::exclusive, ThreadClass::batch}) {
        ThreadClass back;
        ASSERT_TRUE(parseThreadClass(threadClassName(t), &back, nullptr));
        EXPECT_EQ(back, t);
    }
}

TEST(ParseArbiterPath, AcceptsSocketPaths) {
    Config c;
    ASSERT_TRUE(parseArbiterPath("/tmp/a.sock", &c, nullptr));
    EXPECT_EQ(c.arbiterSocket, "/tmp/a.sock");
    ASSERT_TRUE(parseArbiterPath("relative.sock", &c, nullptr));
    const std::string longest(kMaxSocketPathBytes, 'x');
    ASSERT_TRUE(parseArbiterPath(longest, &c, nullptr));
    EXPECT_EQ(c.arbiterSocket, longest);
}

TEST(ParseArbiterPath, RejectsEmptyTooLongAndNul) {
    for (const std::string& bad :
         {std::string(), std::string(kMaxSocketPathBytes + 1, 'x'), std::string("a\0b", 3)}) {
        Config c;
        std::string error;
        EXPECT_FALSE(parseArbiterPath(bad, &c, &error));
        expectErrorShape(error, "--arbiter", kArbiterForm);
        EXPECT_EQ(c.arbiterSocket, "/run/arbrun/arbiter.sock");
    }
}

TEST(ErrorMessages, ControlCharactersStayOnOneLine) {
    Config c;
    std::string error;
    ASSERT_FALSE(parseCores("1\n2\t'\x01", &c, &error));
    EXPECT_NE(error.find(R"('1\n2\t\'\x01')"), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace arbconfig
