// matchClass: each rule kind, globs, index ranges, callers, first match wins, no match.
#include <arbconfig/config.h>
#include <gtest/gtest.h>

namespace arbconfig {
namespace {

std::vector<ClassRule> rules(std::initializer_list<const char*> texts) {
    std::vector<ClassRule> out;
    for (const char* text : texts) {
        std::string error;
        EXPECT_TRUE(parseClassRule(text, &out.emplace_back(), &error)) << error;
    }
    return out;
}

ThreadFacts facts(std::string_view symbol, std::string_view name, uint64_t index,
                  std::vector<std::string_view> callers = {}) {
    return ThreadFacts{symbol, name, index, std::move(callers)};
}

TEST(MatchClass, SymbolGlob) {
    const auto r = rules({"sym:encode_*=batch"});
    EXPECT_EQ(matchClass(r, facts("encode_frame", "x", 0)), ThreadClass::batch);
    EXPECT_EQ(matchClass(r, facts("decode_frame", "encode_frame", 0)), std::nullopt);
}

TEST(MatchClass, DemangledCppSymbol) {
    const auto r = rules({"sym:Pool::worker(*)=batch"});
    EXPECT_EQ(matchClass(r, facts("Pool::worker(void*)", "", 0)), ThreadClass::batch);
    EXPECT_EQ(matchClass(r, facts("Pool::worker", "", 0)), std::nullopt);
}

TEST(MatchClass, NameGlob) {
    const auto r = rules({"name:io-[0-9]=exclusive"});
    EXPECT_EQ(matchClass(r, facts("f", "io-3", 0)), ThreadClass::exclusive);
    EXPECT_EQ(matchClass(r, facts("io-3", "io-33", 0)), std::nullopt);
    EXPECT_EQ(matchClass(r, facts("f", "", 0)), std::nullopt);
}

TEST(MatchClass, IndexSingle) {
    const auto r = rules({"index:0=exclusive"});
    EXPECT_EQ(matchClass(r, facts("", "", 0)), ThreadClass::exclusive);
    EXPECT_EQ(matchClass(r, facts("", "", 1)), std::nullopt);
}

TEST(MatchClass, IndexRangeIsInclusive) {
    const auto r = rules({"index:2-4=batch"});
    EXPECT_EQ(matchClass(r, facts("", "", 1)), std::nullopt);
    EXPECT_EQ(matchClass(r, facts("", "", 2)), ThreadClass::batch);
    EXPECT_EQ(matchClass(r, facts("", "", 3)), ThreadClass::batch);
    EXPECT_EQ(matchClass(r, facts("", "", 4)), ThreadClass::batch);
    EXPECT_EQ(matchClass(r, facts("", "", 5)), std::nullopt);
    const auto top = rules({"index:18446744073709551615=batch"});
    EXPECT_EQ(matchClass(top, facts("", "", ~uint64_t{0})), ThreadClass::batch);
}

TEST(MatchClass, CallerMatchesAnyFrame) {
    const auto r = rules({"caller:*ThreadPool::spawn*=batch"});
    EXPECT_EQ(matchClass(r, facts("f", "n", 0, {"start", "ThreadPool::spawn(int)", "main"})),
              ThreadClass::batch);
    EXPECT_EQ(matchClass(r, facts("ThreadPool::spawn", "ThreadPool::spawn", 0, {"main"})),
              std::nullopt);
    EXPECT_EQ(matchClass(r, facts("f", "n", 0, {})), std::nullopt);
}

TEST(MatchClass, FirstMatchWins) {
    const auto r = rules({"name:io-*=exclusive", "sym:*=batch", "index:0-100=normal"});
    const ClassRule* matched = nullptr;
    EXPECT_EQ(matchClass(r, facts("w", "io-1", 5), &matched), ThreadClass::exclusive);
    EXPECT_EQ(matched, &r[0]);
    EXPECT_EQ(matchClass(r, facts("w", "cpu-1", 5), &matched), ThreadClass::batch);
    EXPECT_EQ(matched, &r[1]);
    EXPECT_EQ(matched->text, "sym:*=batch");
}

TEST(MatchClass, NoMatchClearsMatched) {
    const auto r = rules({"name:io-*=exclusive", "index:3=batch"});
    const ClassRule* matched = &r[0];
    EXPECT_EQ(matchClass(r, facts("w", "cpu", 4), &matched), std::nullopt);
    EXPECT_EQ(matched, nullptr);
    EXPECT_EQ(matchClass({}, facts("w", "cpu", 4), &matched), std::nullopt);
    EXPECT_EQ(matched, nullptr);
}

TEST(MatchClass, HandBuiltRules) {
    ClassRule rule;
    rule.kind = ClassRule::Kind::name;
    rule.glob = "gc*";
    rule.threadClass = ThreadClass::batch;
    EXPECT_EQ(matchClass({rule}, facts("", "gc-thread", 0)), ThreadClass::batch);
}

}  // namespace
}  // namespace arbconfig
