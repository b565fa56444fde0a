// ClassRuleSet: splits the rules once so that creation and renames are each one matchClass() call
// over the rules that can still change the answer.
#include "threads/class_rules.h"

#include <utility>

namespace arbrun {

using arbconfig::ClassRule;

// Sorts each rule into the fixed or the named list with its position; the lists keep the
// configured order, so matchClass()'s "first match" in a list is also the earliest position.
ClassRuleSet::ClassRuleSet(std::vector<ClassRule> rules, arbconfig::ThreadClass defaultClass)
    : rules_(std::move(rules)), defaultClass_(defaultClass) {
    if (rules_.size() > kNoRule) rules_.resize(kNoRule);
    for (size_t i = 0; i < rules_.size(); ++i) {
        const ClassRule& rule = rules_[i];
        const bool named = rule.kind == ClassRule::Kind::name;
        (named ? named_ : fixed_).push_back(rule);
        (named ? namedPosition_ : fixedPosition_).push_back(RuleIndex(i));
        needsSymbol_ |= rule.kind == ClassRule::Kind::sym;
        needsCallers_ |= rule.kind == ClassRule::Kind::caller;
    }
}

// Bounds-checked so that a zeroed or stale per-thread record can never index past the rules.
const ClassRule* ClassRuleSet::rule(RuleIndex index) const {
    return index < rules_.size() ? &rules_[index] : nullptr;
}

// fixed_ holds no name: rule, so the name in `facts` cannot influence the answer.
RuleIndex ClassRuleSet::firstFixedMatch(const arbconfig::ThreadFacts& facts) const {
    const ClassRule* matched = nullptr;
    if (!arbconfig::matchClass(fixed_, facts, &matched)) return kNoRule;
    return fixedPosition_[size_t(matched - fixed_.data())];
}

// The earliest matching name: rule is the only one that can precede `fixedRule`: if it does not,
// no name: rule does, and the fixed rule (or the default) stands.
ClassDecision ClassRuleSet::decide(RuleIndex fixedRule, std::string_view name) const {
    arbconfig::ThreadFacts facts;
    facts.name = name;
    const ClassRule* matched = nullptr;
    if (arbconfig::matchClass(named_, facts, &matched)) {
        const RuleIndex position = namedPosition_[size_t(matched - named_.data())];
        if (position < fixedRule) return {matched->threadClass, position};
    }
    if (const ClassRule* fixed = rule(fixedRule)) return {fixed->threadClass, fixedRule};
    return {defaultClass_, kNoRule};
}

}  // namespace arbrun
