// Class-rule matching: pure, no allocation, so the preload library can classify a thread inside
// pthread_create (and again when the thread names itself) without taking locks.
#include "arbconfig/config.h"
#include "arbconfig/glob.h"

namespace arbconfig {
namespace {

// One rule against one thread; `caller` is an "any frame" match because the creating stack holds
// the application's frames and the library's.
bool ruleMatches(const ClassRule& rule, const ThreadFacts& facts) {
    switch (rule.kind) {
        case ClassRule::Kind::sym:
            return globMatch(rule.glob, facts.symbol);
        case ClassRule::Kind::name:
            return globMatch(rule.glob, facts.name);
        case ClassRule::Kind::index:
            return rule.first <= facts.index && facts.index <= rule.last;
        case ClassRule::Kind::caller:
            for (const std::string_view caller : facts.callers) {
                if (globMatch(rule.glob, caller)) return true;
            }
            return false;
    }
    return false;
}

}  // namespace

// Rules are few (a handful from the command line), so a linear scan in order is both the simplest
// and the cheapest way to honour "first match wins".
std::optional<ThreadClass> matchClass(const std::vector<ClassRule>& rules, const ThreadFacts& facts,
                                      const ClassRule** matched) {
    for (const ClassRule& rule : rules) {
        if (ruleMatches(rule, facts)) {
            if (matched) *matched = &rule;
            return rule.threadClass;
        }
    }
    if (matched) *matched = nullptr;
    return std::nullopt;
}

}  // namespace arbconfig
