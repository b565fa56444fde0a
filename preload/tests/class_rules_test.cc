// ClassRuleSet: the split into creation-time and name rules gives exactly matchClass()'s "first
// match wins" over all facts, at creation (unnamed) and after any rename.
#include "threads/class_rules.h"

#include <gtest/gtest.h>

#include <string>

namespace arbrun {
namespace {

using arbconfig::ClassRule;
using arbconfig::ThreadClass;
using arbconfig::ThreadFacts;

std::vector<ClassRule> rules(std::initializer_list<const char*> texts) {
    std::vector<ClassRule> out;
    for (const char* text : texts) {
        std::string error;
        EXPECT_TRUE(arbconfig::parseClassRule(text, &out.emplace_back(), &error)) << error;
    }
    return out;
}

ThreadFacts facts(std::string_view symbol, uint64_t index,
                  std::vector<std::string_view> callers = {}) {
    ThreadFacts f;
    f.symbol = symbol;
    f.index = index;
    f.callers = std::move(callers);
    return f;
}

// What the split must agree with: matchClass() over every fact at once.
ClassDecision reference(const std::vector<ClassRule>& all, ThreadFacts f, std::string_view name,
                        ThreadClass defaultClass) {
    f.name = name;
    const ClassRule* matched = nullptr;
    const auto found = arbconfig::matchClass(all, f, &matched);
    if (!found) return {defaultClass, kNoRule};
    return {*found, RuleIndex(matched - all.data())};
}

TEST(ClassRuleSet, EmptyHasNoNeeds) {
    const ClassRuleSet set({}, ThreadClass::batch);
    EXPECT_TRUE(set.empty());
    EXPECT_FALSE(set.needsSymbol());
    EXPECT_FALSE(set.needsCallers());
    EXPECT_EQ(set.firstFixedMatch(facts("f", 0)), kNoRule);
    EXPECT_EQ(set.decide(kNoRule, "x"), (ClassDecision{ThreadClass::batch, kNoRule}));
}

TEST(ClassRuleSet, NeedsFollowRuleKinds) {
    EXPECT_TRUE(ClassRuleSet(rules({"sym:a=batch"}), ThreadClass::normal).needsSymbol());
    EXPECT_FALSE(ClassRuleSet(rules({"sym:a=batch"}), ThreadClass::normal).needsCallers());
    EXPECT_TRUE(ClassRuleSet(rules({"caller:a=batch"}), ThreadClass::normal).needsCallers());
    const ClassRuleSet indexAndName(rules({"index:1=batch", "name:x=batch"}), ThreadClass::normal);
    EXPECT_FALSE(indexAndName.needsSymbol());
    EXPECT_FALSE(indexAndName.needsCallers());
}

TEST(ClassRuleSet, FirstFixedMatchIgnoresNameRules) {
    const ClassRuleSet set(rules({"name:*=exclusive", "index:2=batch", "sym:w*=exclusive"}),
                           ThreadClass::normal);
    EXPECT_EQ(set.firstFixedMatch(facts("worker", 2)), 1);
    EXPECT_EQ(set.firstFixedMatch(facts("worker", 3)), 2);
    EXPECT_EQ(set.firstFixedMatch(facts("main", 3)), kNoRule);
}

TEST(ClassRuleSet, CallerRuleMatchesAnyFrame) {
    const ClassRuleSet set(rules({"caller:Pool::*=batch"}), ThreadClass::normal);
    EXPECT_EQ(set.firstFixedMatch(facts("w", 0, {"spawn", "Pool::grow()", "main"})), 0);
    EXPECT_EQ(set.firstFixedMatch(facts("w", 0, {"spawn", "main"})), kNoRule);
}

TEST(ClassRuleSet, NameRuleBeforeFixedRuleWinsOnRename) {
    const ClassRuleSet set(rules({"name:io-*=exclusive", "sym:worker=batch"}), ThreadClass::normal);
    const RuleIndex fixed = set.firstFixedMatch(facts("worker", 0));
    EXPECT_EQ(set.decide(fixed, ""), (ClassDecision{ThreadClass::batch, 1}));
    EXPECT_EQ(set.decide(fixed, "io-1"), (ClassDecision{ThreadClass::exclusive, 0}));
    EXPECT_EQ(set.decide(fixed, "cpu-1"), (ClassDecision{ThreadClass::batch, 1}));  // renamed back
}

TEST(ClassRuleSet, NameRuleAfterFixedRuleLoses) {
    const ClassRuleSet set(rules({"sym:worker=batch", "name:io-*=exclusive"}), ThreadClass::normal);
    const RuleIndex fixed = set.firstFixedMatch(facts("worker", 0));
    EXPECT_EQ(set.decide(fixed, "io-1"), (ClassDecision{ThreadClass::batch, 0}));
    // A thread no fixed rule matched gets the name rule.
    EXPECT_EQ(set.decide(set.firstFixedMatch(facts("other", 0)), "io-1"),
              (ClassDecision{ThreadClass::exclusive, 1}));
}

TEST(ClassRuleSet, NoMatchGivesDefaultClass) {
    const ClassRuleSet set(rules({"name:io-*=exclusive"}), ThreadClass::batch);
    EXPECT_EQ(set.decide(kNoRule, "cpu"), (ClassDecision{ThreadClass::batch, kNoRule}));
    EXPECT_EQ(set.decide(kNoRule, ""), (ClassDecision{ThreadClass::batch, kNoRule}));
}

TEST(ClassRuleSet, RuleLookupIsBoundsChecked) {
    const ClassRuleSet set(rules({"index:0=batch"}), ThreadClass::normal);
    ASSERT_NE(set.rule(0), nullptr);
    EXPECT_EQ(set.rule(0)->text, "index:0=batch");
    EXPECT_EQ(set.rule(1), nullptr);
    EXPECT_EQ(set.rule(kNoRule), nullptr);
}

// Every combination of a small rule list, thread facts and names agrees with matchClass().
TEST(ClassRuleSet, AgreesWithMatchClassExhaustively) {
    const std::vector<ClassRule> all =
        rules({"name:a*=exclusive", "index:1-2=batch", "name:b*=batch", "sym:w*=exclusive",
               "caller:spawn=batch", "name:*z=normal", "sym:*=batch"});
    const char* symbols[] = {"", "worker", "main"};
    const char* names[] = {"", "a1", "b1", "az", "bz", "q", "z"};
    const std::vector<std::vector<std::string_view>> callerSets = {{}, {"spawn", "main"}};
    // Every prefix of the rule list, so that each rule is also the last one.
    for (size_t count = 0; count <= all.size(); ++count) {
        const std::vector<ClassRule> subset(all.begin(), all.begin() + long(count));
        const ClassRuleSet set(subset, ThreadClass::normal);
        for (const char* symbol : symbols) {
            for (uint64_t index = 0; index < 4; ++index) {
                for (const auto& callers : callerSets) {
                    const ThreadFacts f = facts(symbol, index, callers);
                    const RuleIndex fixed = set.firstFixedMatch(f);
                    for (const char* name : names) {
                        EXPECT_EQ(set.decide(fixed, name),
                                  reference(subset, f, name, ThreadClass::normal))
                            << "rules " << count << " symbol '" << symbol << "' index " << index
                            << " callers " << callers.size() << " name '" << name << "'";
                    }
                }
            }
        }
    }
}

}  // namespace
}  // namespace arbrun
