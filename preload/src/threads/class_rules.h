// The `--class` rules as the preload library evaluates them: once when a thread is created (every
// fact but its name is known then) and again whenever the thread is (re)named. Pure logic: no
// threads, no unwinding, no runtime, so it is unit-tested on its own (preload/tests).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "arbconfig/config.h"

namespace arbrun {

// A rule's position in the configured list ("first match wins" compares positions).
using RuleIndex = uint16_t;
inline constexpr RuleIndex kNoRule = 0xffff;  // no rule matched: the default class applies

// The class a thread gets and the rule that gave it (kNoRule: the default class).
struct ClassDecision {
    arbconfig::ThreadClass threadClass = arbconfig::ThreadClass::normal;
    RuleIndex rule = kNoRule;

    friend bool operator==(const ClassDecision&, const ClassDecision&) = default;
};

// The rules split into the part fixed at creation (sym:, index:, caller:) and the name: rules,
// keeping each rule's position, so that a rename needs only the name and the position of the
// first fixed rule that matched (two bytes per thread) to give exactly the class matchClass()
// would give over all the facts. Built once at start-up, read-only afterwards: any thread may
// call its const members concurrently.
class ClassRuleSet {
  public:
    ClassRuleSet() = default;
    // Only the first kNoRule rules are kept (the launcher never passes that many).
    ClassRuleSet(std::vector<arbconfig::ClassRule> rules, arbconfig::ThreadClass defaultClass);

    bool empty() const { return rules_.empty(); }
    // Whether any rule needs the start routine's symbol / the creating stack's functions, so that
    // pthread_create resolves them only then.
    bool needsSymbol() const { return needsSymbol_; }
    bool needsCallers() const { return needsCallers_; }
    arbconfig::ThreadClass defaultClass() const { return defaultClass_; }
    // The rule at `index` (as written), or null for kNoRule or out of range.
    const arbconfig::ClassRule* rule(RuleIndex index) const;

    // Position of the first sym:/index:/caller: rule that matches `facts` (facts.name is not
    // looked at), or kNoRule.
    RuleIndex firstFixedMatch(const arbconfig::ThreadFacts& facts) const;
    // The class for a thread whose fixed facts matched `fixedRule` first and whose name is `name`
    // (empty: unnamed): a name: rule placed before `fixedRule` wins, then `fixedRule`, then the
    // default class.
    ClassDecision decide(RuleIndex fixedRule, std::string_view name) const;

  private:
    std::vector<arbconfig::ClassRule> rules_;  // as configured
    std::vector<arbconfig::ClassRule> fixed_, named_;
    std::vector<RuleIndex> fixedPosition_, namedPosition_;  // parallel to fixed_ and named_
    arbconfig::ThreadClass defaultClass_ = arbconfig::ThreadClass::normal;
    bool needsSymbol_ = false, needsCallers_ = false;
};

}  // namespace arbrun
