// The ARBRUN_* environment format (see config.h): writing a Config and reading it back through the
// same parsers the command line uses, with the variable's name as the label in errors.
#include <cstdio>

#include "parse_detail.h"

namespace arbconfig {
namespace {

// ARBRUN_CLASS separates rules with ';', so a rule's own '%' and ';' are percent-encoded. A
// separate layer from the glob's '\' escapes: the rule text comes back byte for byte.
std::string encodeRule(std::string_view rule) {
    std::string out;
    out.reserve(rule.size());
    for (const char c : rule) {
        if (c == '%') {
            out += "%25";
        } else if (c == ';') {
            out += "%3B";
        } else {
            out += c;
        }
    }
    return out;
}

// Inverse of encodeRule(); strict, so a hand-written stray '%' is reported, not guessed at.
bool decodeRule(std::string_view encoded, std::string* rule) {
    rule->clear();
    for (size_t i = 0; i < encoded.size(); ++i) {
        if (encoded[i] != '%') {
            *rule += encoded[i];
            continue;
        }
        const std::string_view code = encoded.substr(i + 1, 2);
        if (code == "25") {
            *rule += '%';
        } else if (code == "3B" || code == "3b") {
            *rule += ';';
        } else {
            return false;
        }
        i += 2;
    }
    return true;
}

// A rule's own text when it reads back as the same rule (keeps the user's spelling for
// messages); the canonical form otherwise (a rule built in code, or with stale text).
std::string ruleText(const ClassRule& rule) {
    ClassRule reparsed;
    if (!rule.text.empty() && parseClassRule(rule.text, &reparsed, nullptr) && reparsed == rule) {
        return rule.text;
    }
    return formatClassRule(rule);
}

// The shortest form parseCores() reads back to the same pair: "N", "MIN:MAX" or "MIN:".
std::string coresText(const Config& config) {
    std::string out = std::to_string(config.minCores);
    if (config.maxCores == config.minCores) return out;
    out += ':';
    if (config.maxCores != 0) out += std::to_string(config.maxCores);
    return out;
}

// ARBRUN_CLASS: rules in order; empty segments (a trailing ';') are skipped. Errors name the
// rule's position ("ARBRUN_CLASS rule 2") so a long list is easy to fix.
bool parseRules(std::string_view value, std::vector<ClassRule>* rules, std::string* error) {
    std::vector<ClassRule> parsed;
    size_t position = 0;
    while (!value.empty()) {
        const size_t semi = value.find(';');
        const std::string_view segment = value.substr(0, semi);
        value = semi == std::string_view::npos ? std::string_view() : value.substr(semi + 1);
        if (segment.empty()) continue;
        const std::string label = std::string(kEnvClass) + " rule " + std::to_string(++position);
        std::string rule;
        if (!decodeRule(segment, &rule)) {
            return detail::invalid(label, segment, "'%' must start %25 ('%') or %3B (';')",
                                   kClassRuleForm, error);
        }
        if (!detail::parseClassRuleAs(label, rule, &parsed.emplace_back(), error)) return false;
    }
    *rules = std::move(parsed);
    return true;
}

}  // namespace

// Shortest text that parses back to the same value (at most 9 fraction digits, as the parser).
static std::string formatLoadFactor(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.9f", value);
    std::string s(text);
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
    return s;
}

// All variables, always: a launcher must override whatever its own environment held.
std::vector<std::pair<std::string, std::string>> toEnvironment(const Config& config) {
    std::string rules;
    for (const ClassRule& rule : config.classRules) {
        if (!rules.empty()) rules += ';';
        rules += encodeRule(ruleText(rule));
    }
    auto flag = [](bool b) { return std::string(b ? "1" : "0"); };
    return {
        {kEnvCores, coresText(config)},
        {kEnvPriority, std::to_string(config.priority)},
        {kEnvClass, std::move(rules)},
        {kEnvDefaultClass, std::string(threadClassName(config.defaultClass))},
        {kEnvArbiter, config.arbiterSocket},
        {kEnvStandalone, flag(config.standalone)},
        {kEnvStats, flag(config.stats)},
        {kEnvVerbose, flag(config.verbose)},
        {kEnvTimeSlice, std::to_string(config.timeSliceUs)},
        {kEnvReleaseDefer, std::to_string(config.releaseDeferUs)},
        {kEnvIdleSpin, std::to_string(config.idleSpinUs)},
        {kEnvRetakeAfter, std::to_string(config.retakeAfterUs)},
        {kEnvTrace, config.tracePath},
        {kEnvEstimator, std::string(estimatorName(config.estimator.kind))},
        {kEnvLoadFactor, formatLoadFactor(config.estimator.loadFactor)},
        {kEnvHysteresis, std::to_string(config.estimator.hysteresisPct)},
        {kEnvWindow, std::to_string(config.estimator.windowMs)},
        {kEnvCheckPeriod, std::to_string(config.estimator.checkPeriodUs)},
        {kEnvIdleGrace, std::to_string(config.estimator.idleGraceUs)},
        {kEnvExplainClasses, flag(config.explainClasses)},
        {kEnvNativeSyscalls, flag(config.nativeSyscalls)},
        {kEnvDispatch, std::string(dispatchName(config.dispatch))},
        {kEnvCohortMax, std::to_string(config.cohortMax)},
        {kEnvCohortMaxUs, std::to_string(config.cohortMaxUs)},
    };
}

// Parses into a copy and commits only when every variable is valid, so a caller that falls back
// to defaults on error still holds a consistent Config.
bool fromEnvironment(const std::function<const char*(const char*)>& lookup, Config* config,
                     std::string* error) {
    Config next = *config;
    auto value = [&](const char* name) -> std::string_view {
        const char* v = lookup(name);
        return v ? std::string_view(v) : std::string_view();
    };
    std::string_view v;
    // The variables that set Config fields, each through the parser its option uses, in the order
    // their errors are reported.
    using ConfigParser = bool (*)(std::string_view label, std::string_view text, Config * config,
                                  std::string * error);
    const std::pair<const char*, ConfigParser> configVars[] = {
        {kEnvCores, detail::parseCoresAs},
        {kEnvPriority, detail::parsePriorityAs},
        {kEnvClass, [](std::string_view, std::string_view text, Config* c,
                       std::string* e) { return parseRules(text, &c->classRules, e); }},
        {kEnvDefaultClass,
         [](std::string_view label, std::string_view text, Config* c, std::string* e) {
             return detail::parseThreadClassAs(label, text, &c->defaultClass, e);
         }},
        {kEnvArbiter, detail::parseArbiterPathAs},
        {kEnvTrace, detail::parseTracePathAs},
        {kEnvTimeSlice, detail::parseTimeSliceAs},
        {kEnvReleaseDefer, detail::parseReleaseDeferAs},
        {kEnvIdleSpin, detail::parseIdleSpinAs},
        {kEnvRetakeAfter, detail::parseRetakeAfterAs},
        {kEnvDispatch, detail::parseDispatchAs},
        {kEnvCohortMax, detail::parseCohortMaxAs},
        {kEnvCohortMaxUs, detail::parseCohortMaxUsAs}};
    for (const auto& [name, parse] : configVars) {
        if (!(v = value(name)).empty() && !parse(name, v, &next, error)) return false;
    }
    using detail::EstimatorField;
    const std::pair<const char*, EstimatorField> estimatorVars[] = {
        {kEnvEstimator, EstimatorField::kind},
        {kEnvLoadFactor, EstimatorField::loadFactor},
        {kEnvHysteresis, EstimatorField::hysteresis},
        {kEnvWindow, EstimatorField::window},
        {kEnvCheckPeriod, EstimatorField::checkPeriod},
        {kEnvIdleGrace, EstimatorField::idleGrace}};
    for (const auto& [name, field] : estimatorVars) {
        if (!(v = value(name)).empty() &&
            !detail::parseEstimatorFieldAs(field, name, v, &next, error)) {
            return false;
        }
    }
    if (auto inconsistent = checkConsistency(next, kEnvIdleGrace)) {
        if (error) *error = *inconsistent;
        return false;
    }
    const std::pair<const char*, bool*> flags[] = {{kEnvStandalone, &next.standalone},
                                                   {kEnvStats, &next.stats},
                                                   {kEnvVerbose, &next.verbose},
                                                   {kEnvExplainClasses, &next.explainClasses},
                                                   {kEnvNativeSyscalls, &next.nativeSyscalls}};
    for (const auto& [name, field] : flags) {
        if (!(v = value(name)).empty() && !detail::parseBoolAs(name, v, field, error)) return false;
    }
    *config = std::move(next);
    return true;
}

}  // namespace arbconfig
