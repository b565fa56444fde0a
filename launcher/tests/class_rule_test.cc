// --class rules: each kind, the split at the first ':' and the last '=', and every kind of bad
// rule.
#include <arbconfig/config.h>
#include <gtest/gtest.h>

namespace arbconfig {
namespace {

ClassRule parsed(std::string_view text) {
    ClassRule rule;
    std::string error;
    EXPECT_TRUE(parseClassRule(text, &rule, &error)) << error;
    return rule;
}

TEST(ParseClassRule, EachKind) {
    ClassRule r = parsed("sym:worker*=batch");
    EXPECT_EQ(r.kind, ClassRule::Kind::sym);
    EXPECT_EQ(r.glob, "worker*");
    EXPECT_EQ(r.threadClass, ThreadClass::batch);
    EXPECT_EQ(r.text, "sym:worker*=batch");

    r = parsed("name:io-[0-9]=exclusive");
    EXPECT_EQ(r.kind, ClassRule::Kind::name);
    EXPECT_EQ(r.glob, "io-[0-9]");
    EXPECT_EQ(r.threadClass, ThreadClass::exclusive);

    r = parsed("caller:*ThreadPool*=normal");
    EXPECT_EQ(r.kind, ClassRule::Kind::caller);
    EXPECT_EQ(r.glob, "*ThreadPool*");
    EXPECT_EQ(r.threadClass, ThreadClass::normal);
}

TEST(ParseClassRule, IndexSingleAndRange) {
    ClassRule r = parsed("index:0=exclusive");
    EXPECT_EQ(r.kind, ClassRule::Kind::index);
    EXPECT_EQ(r.first, 0u);
    EXPECT_EQ(r.last, 0u);
    EXPECT_TRUE(r.glob.empty());
    r = parsed("index:2-5=batch");
    EXPECT_EQ(r.first, 2u);
    EXPECT_EQ(r.last, 5u);
    r = parsed("index:7-7=batch");
    EXPECT_EQ(r.first, 7u);
    EXPECT_EQ(r.last, 7u);
    r = parsed("index:0-18446744073709551615=normal");
    EXPECT_EQ(r.last, ~uint64_t{0});
}

TEST(ParseClassRule, GlobMayContainColonsAndEquals) {
    ClassRule r = parsed("sym:ns::Pool::operator=*=batch");
    EXPECT_EQ(r.glob, "ns::Pool::operator=*");
    EXPECT_EQ(r.threadClass, ThreadClass::batch);
    r = parsed("name:a=b==normal");
    EXPECT_EQ(r.glob, "a=b=");
}

TEST(ParseClassRule, GlobEscapesAndClasses) {
    EXPECT_EQ(parsed(R"(sym:*operator\[\]*=batch)").glob, R"(*operator\[\]*)");
    EXPECT_EQ(parsed("name:[[:alpha:]]*=batch").glob, "[[:alpha:]]*");
    EXPECT_EQ(parsed("name:[!]x]=batch").glob, "[!]x]");
    EXPECT_EQ(parsed("name:a;b%c=batch").glob, "a;b%c");
}

// Every kind of bad rule is rejected with a reason, and the output is left alone.
TEST(ParseClassRule, RejectsEveryKindOfBadRule) {
    const struct {
        const char* text;
        const char* reason;
    } cases[] = {
        {"", "'=CLASS' is missing"},
        {"sym:worker", "'=CLASS' is missing"},
        {"sym:worker=", "the class after '=' is missing"},
        {"sym:worker=fast", "unknown class 'fast'"},
        {"sym:worker=Batch", "unknown class 'Batch'"},
        {"worker=batch", "unknown rule kind 'worker'"},
        {"symbol:w=batch", "unknown rule kind 'symbol'"},
        {":w=batch", "unknown rule kind ''"},
        {"sym:=batch", "the pattern is empty"},
        {"name:[abc=batch", "is not closed"},
        {"name:abc\\=batch", "lone '\\'"},
        {"name:[[:foo:]]=batch", "unknown character class"},
        {"name:[[.a.]]=batch", "must start a class"},
        {"name:[z-a]=batch", "runs backwards"},
        {"index:=batch", "N or N-M"},
        {"index:x=batch", "N or N-M"},
        {"index:-3=batch", "N or N-M"},
        {"index:3-=batch", "N or N-M"},
        {"index:1-2-3=batch", "N or N-M"},
        {"index: 1=batch", "N or N-M"},
        {"index:18446744073709551616=batch", "N or N-M"},
        {"index:5-2=batch", "runs backwards"},
    };
    for (const auto& c : cases) {
        ClassRule rule;
        rule.glob = "untouched";
        std::string error;
        EXPECT_FALSE(parseClassRule(c.text, &rule, &error)) << c.text;
        EXPECT_EQ(error.rfind("--class: ", 0), 0u) << error;
        EXPECT_NE(error.find(c.reason), std::string::npos) << c.text << " -> " << error;
        EXPECT_NE(error.find(std::string("; expected ") + std::string(kClassRuleForm)),
                  std::string::npos)
            << error;
        EXPECT_EQ(rule.glob, "untouched");
    }
}

TEST(FormatClassRule, CanonicalFormParsesBackEqual) {
    for (const char* text : {"sym:w*=batch", "name:x=normal", "caller:f=exclusive", "index:3=batch",
                             "index:3-9=normal"}) {
        const ClassRule r = parsed(text);
        EXPECT_EQ(formatClassRule(r), text);
    }
    const ClassRule r = parsed("index:4-4=batch");
    EXPECT_EQ(formatClassRule(r), "index:4=batch");
}

}  // namespace
}  // namespace arbconfig
