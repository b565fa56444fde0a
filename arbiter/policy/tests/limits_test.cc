// The limits file: parsing (every malformed form names its line), which entry applies, clamping.
#include <gtest/gtest.h>

#include "arbpolicy/limits.h"

namespace arbpolicy {
namespace {

// A fixed user database so the tests do not depend on /etc/passwd.
NameResolver fakeResolver() {
    std::map<std::string, uid_t> users = {{"alice", 1000}, {"bob", 1001}, {"root", 0}};
    std::map<std::string, gid_t> groups = {{"batch", 200}, {"web", 201}, {"wheel", 10}};
    NameResolver resolver;
    resolver.user = [users](const std::string& name) -> std::optional<uid_t> {
        auto it = users.find(name);
        return it == users.end() ? std::nullopt : std::optional<uid_t>(it->second);
    };
    resolver.group = [groups](const std::string& name) -> std::optional<gid_t> {
        auto it = groups.find(name);
        return it == groups.end() ? std::nullopt : std::optional<gid_t>(it->second);
    };
    return resolver;
}

std::optional<LimitsConfig> parse(std::string_view text, std::string* error) {
    return LimitsConfig::parse(text, fakeResolver(), error);
}

// Parses text that must fail, and returns the error.
std::string errorOf(std::string_view text) {
    std::string error;
    EXPECT_FALSE(parse(text, &error)) << text;
    return error;
}

bool operator==(const Limit& a, const Limit& b) {
    return a.bestPriority == b.bestPriority && a.maxCores == b.maxCores;
}

constexpr const char* kExample = R"(# arbiter limits
default priority=4 max-cores=2

user alice priority=0 max-cores=8   # the latency-sensitive service
user 1001  max-cores=unlimited
group batch priority=6 max-cores=16
	group web   priority=2 max-cores=4
user 4242
)";

TEST(LimitsParse, ExampleFile) {
    std::string error;
    std::optional<LimitsConfig> c = parse(kExample, &error);
    ASSERT_TRUE(c) << error;
    ASSERT_TRUE(c->defaultLimit);
    EXPECT_TRUE((*c->defaultLimit == Limit{4, 2}));
    EXPECT_TRUE((c->users.at(1000) == Limit{0, 8}));
    EXPECT_TRUE((c->users.at(1001) == Limit{0, UINT32_MAX}));
    EXPECT_TRUE((c->users.at(4242) == Limit{}));
    EXPECT_TRUE((c->groups.at(200) == Limit{6, 16}));
    EXPECT_TRUE((c->groups.at(201) == Limit{2, 4}));
}

TEST(LimitsParse, EmptyAndCommentOnlyFiles) {
    std::string error;
    for (const char* text : {"", "\n\n", "# nothing\n   # still nothing", "\r\n"}) {
        std::optional<LimitsConfig> c = parse(text, &error);
        ASSERT_TRUE(c) << error;
        EXPECT_FALSE(c->defaultLimit);
        EXPECT_TRUE(c->users.empty());
        EXPECT_TRUE(c->groups.empty());
    }
}

TEST(LimitsParse, SettingsInAnyOrderAndCrlf) {
    std::string error;
    std::optional<LimitsConfig> c = parse("user bob max-cores=3 priority=5\r\n", &error);
    ASSERT_TRUE(c) << error;
    EXPECT_TRUE((c->users.at(1001) == Limit{5, 3}));
}

TEST(LimitsParse, ErrorsNameTheLineAndTheAcceptedForm) {
    struct Case {
        const char* text;
        const char* mentions;
    };
    const Case cases[] = {
        {"\n\nusr alice priority=1", "line 3: unknown entry 'usr'"},
        {"user", "line 1: 'user' needs a user name or uid"},
        {"group priority=3", "line 1: 'group' needs a group name or gid"},
        {"user carol priority=1", "line 1: unknown user 'carol'"},
        {"group nobodyhere", "line 1: unknown group 'nobodyhere'"},
        {"user alice prio=1", "line 1: unknown setting 'prio'"},
        {"user alice priority", "line 1: expected KEY=VALUE, got 'priority'"},
        {"user alice priority=8", "line 1: priority must be an integer 0..7"},
        {"user alice priority=-1", "priority must be an integer 0..7"},
        {"user alice priority=", "priority must be an integer 0..7"},
        {"user alice priority=1x", "priority must be an integer 0..7"},
        {"user alice max-cores=-2", "line 1: max-cores must be a non-negative integer"},
        {"user alice max-cores=4294967295", "max-cores must be a non-negative integer"},
        {"user alice max-cores=lots", "max-cores must be a non-negative integer"},
        {"user alice priority=1 priority=2", "line 1: priority given twice"},
        {"user alice max-cores=1 max-cores=2", "line 1: max-cores given twice"},
        {"user alice\nuser 1000", "line 2: user 1000 (uid 1000) already given on line 1"},
        {"group batch\n# x\ngroup 200 priority=1",
         "line 3: group 200 (gid 200) already given on line 1"},
        {"default\ndefault priority=1", "line 2: default already given on line 1"},
        {"default alice", "line 1: 'default' takes no name, got 'alice'"},
        {"user 4294967295", "line 1: uid 4294967295 out of range"},
        {"group 99999999999999999999999", "line 1: gid 99999999999999999999999 out of range"},
        {"user alice =3", "line 1: unknown setting ''"},
    };
    for (const Case& c : cases) {
        std::string error = errorOf(c.text);
        EXPECT_NE(error.find(c.mentions), std::string::npos) << c.text << " -> " << error;
        EXPECT_NE(error.find('('), std::string::npos) << "no accepted form in: " << error;
    }
}

TEST(LimitsParse, SyntaxErrorsShowTheWholeAcceptedForm) {
    std::string error = errorOf("usr alice");
    EXPECT_NE(
        error.find("default|user NAME|UID|group NAME|GID [priority=0..7] [max-cores=N|unlimited]"),
        std::string::npos)
        << error;
}

TEST(LimitsParse, FirstErrorWins) {
    EXPECT_EQ(errorOf("user alice\nbogus\nuser nobody").substr(0, 7), "line 2:");
}

TEST(LimitsParse, NullErrorPointerIsAllowed) {
    EXPECT_FALSE(parse("bogus", nullptr));
}

TEST(LimitsParse, MissingResolverMeansUnknownNames) {
    std::string error;
    EXPECT_FALSE(LimitsConfig::parse("user alice", NameResolver{}, &error));
    EXPECT_NE(error.find("unknown user 'alice'"), std::string::npos) << error;
    EXPECT_TRUE(LimitsConfig::parse("user 12 max-cores=1", NameResolver{}, &error)) << error;
}

TEST(LimitsParse, SystemResolverFindsRoot) {
    std::string error;
    std::optional<LimitsConfig> c = LimitsConfig::parse("user root max-cores=3", &error);
    ASSERT_TRUE(c) << error;  // every Linux system has a user named root with uid 0
    EXPECT_EQ(c->users.at(0).maxCores, 3u);
}

class LimitForTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string error;
        std::optional<LimitsConfig> c = parse(kExample, &error);
        ASSERT_TRUE(c) << error;
        config = *c;
    }
    LimitsConfig config;
};

TEST_F(LimitForTest, UserEntryWinsOverGroups) {
    EXPECT_TRUE((config.limitFor(1000, {200, 201}) == Limit{0, 8}));
}

TEST_F(LimitForTest, MostPermissiveGroupSettingBySetting) {
    EXPECT_TRUE((config.limitFor(3000, {200, 201}) == Limit{2, 16}));
    EXPECT_TRUE((config.limitFor(3000, {5, 200}) == Limit{6, 16}));
}

TEST_F(LimitForTest, DefaultWhenNothingMatches) {
    EXPECT_TRUE((config.limitFor(3000, {5, 6}) == Limit{4, 2}));
    EXPECT_TRUE((config.limitFor(3000, {}) == Limit{4, 2}));
}

TEST_F(LimitForTest, RootIsUnlimitedUnlessNamed) {
    EXPECT_TRUE((config.limitFor(0, {0}) == Limit{}));
    EXPECT_TRUE((config.limitFor(0, {0, 200}) == Limit{6, 16}));  // a group entry names root
    std::string error;
    std::optional<LimitsConfig> c = parse("default priority=7\nuser root priority=1", &error);
    ASSERT_TRUE(c) << error;
    EXPECT_TRUE((c->limitFor(0, {}) == Limit{1, UINT32_MAX}));
}

TEST(LimitFor, NoDefaultMeansUnlimited) {
    LimitsConfig empty;
    EXPECT_TRUE((empty.limitFor(1234, {1}) == Limit{}));
}

ProcessRequest sample() {
    ProcessRequest r;
    r.key = 9;
    r.requested = {1, 2, 0, 0, 3, 0, 0, 0};
    r.minCores = 5;
    r.maxCores = 10;
    return r;
}

TEST(Clamp, NothingToClamp) {
    LimitsConfig config;
    ProcessRequest r = sample();
    std::string why = "untouched";
    EXPECT_FALSE(config.clamp(Limit{}, &r, &why));
    EXPECT_EQ(why, "untouched");
    EXPECT_EQ(r.requested, sample().requested);
}

TEST(Clamp, PriorityMovesCoresDown) {
    LimitsConfig config;
    ProcessRequest r = sample();
    std::string why;
    EXPECT_TRUE(config.clamp(Limit{4, UINT32_MAX}, &r, &why));
    EXPECT_EQ(r.requested, (std::array<uint32_t, kPriorityLevels>{0, 0, 0, 0, 6, 0, 0, 0}));
    EXPECT_NE(why.find("3 cores asked above priority 4 moved to priority 4"), std::string::npos)
        << why;
}

TEST(Clamp, MaxAndMinLowered) {
    LimitsConfig config;
    ProcessRequest r = sample();
    std::string why;
    EXPECT_TRUE(config.clamp(Limit{0, 3}, &r, &why));
    EXPECT_EQ(r.maxCores, 3u);
    EXPECT_EQ(r.minCores, 3u);
    EXPECT_NE(why.find("max-cores 10 lowered to 3"), std::string::npos) << why;
    EXPECT_NE(why.find("min-cores 5 lowered to 3"), std::string::npos) << why;
}

TEST(Clamp, SaturatesInsteadOfOverflowing) {
    LimitsConfig config;
    ProcessRequest r;
    r.key = 1;
    r.requested.fill(UINT32_MAX);
    EXPECT_TRUE(config.clamp(Limit{7, UINT32_MAX}, &r, nullptr));
    EXPECT_EQ(r.requested[7], UINT32_MAX);
    EXPECT_EQ(r.requested[0], 0u);
}

TEST(Clamp, OutOfRangeBestPriorityIsTreatedAsNearestLevel) {
    LimitsConfig config;
    ProcessRequest r = sample();
    EXPECT_TRUE(config.clamp(Limit{42, UINT32_MAX}, &r, nullptr));
    EXPECT_EQ(r.requested[7], 6u);
    r = sample();
    EXPECT_FALSE(config.clamp(Limit{-3, UINT32_MAX}, &r, nullptr));
}

TEST(Clamp, ClientCannotRaiseItsLimit) {
    // Whatever the request, after clamping nothing is better than the limit.
    LimitsConfig config;
    for (int best = 0; best < kPriorityLevels; ++best) {
        ProcessRequest r;
        r.key = 1;
        r.requested.fill(5);
        r.minCores = 100;
        config.clamp(Limit{best, 4}, &r, nullptr);
        for (int level = 0; level < best; ++level) EXPECT_EQ(r.requested[level], 0u);
        EXPECT_LE(r.maxCores, 4u);
        EXPECT_LE(r.minCores, r.maxCores);
    }
}

}  // namespace
}  // namespace arbpolicy
