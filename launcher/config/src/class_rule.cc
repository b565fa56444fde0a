// Class rules: "KIND:ARG=CLASS" parsing and the canonical text. The rule is split at the first ':'
// (kinds never contain one) and at the last '=' (class names never contain one), so globs may hold
// both, as C++ symbols do ("sym:ns::Pool::operator=*=batch").
#include "arbconfig/glob.h"
#include "parse_detail.h"

namespace arbconfig {
namespace detail {
namespace {

// The four kinds by name; the name list lives in values.cc with the class names.
bool parseKind(std::string_view text, ClassRule::Kind* kind) {
    for (auto k : {ClassRule::Kind::sym, ClassRule::Kind::name, ClassRule::Kind::index,
                   ClassRule::Kind::caller}) {
        if (text == ruleKindName(k)) {
            *kind = k;
            return true;
        }
    }
    return false;
}

// "N" or "N-M" with N <= M, each a plain decimal number.
bool parseIndexRange(std::string_view text, uint64_t* first, uint64_t* last, std::string* why) {
    const size_t dash = text.find('-');
    constexpr uint64_t kMax = ~uint64_t{0};
    if (!parseDecimal(text.substr(0, dash), kMax, first) ||
        (dash != std::string_view::npos && !parseDecimal(text.substr(dash + 1), kMax, last))) {
        *why = "an index is N or N-M with decimal numbers";
        return false;
    }
    if (dash == std::string_view::npos) *last = *first;
    if (*last < *first) {
        *why = "the index range runs backwards";
        return false;
    }
    return true;
}

}  // namespace

// Validates everything a rule can get wrong (kind, class, glob syntax, index range) here, once, so
// matching never meets a malformed rule.
bool parseClassRuleAs(std::string_view label, std::string_view text, ClassRule* rule,
                      std::string* error) {
    const size_t eq = text.rfind('=');
    if (eq == std::string_view::npos) {
        return invalid(label, text, "'=CLASS' is missing", kClassRuleForm, error);
    }
    ClassRule parsed;
    const std::string_view className = text.substr(eq + 1);
    if (className.empty()) {
        return invalid(label, text, "the class after '=' is missing", kClassRuleForm, error);
    }
    if (!parseThreadClassAs(label, className, &parsed.threadClass, nullptr)) {
        return invalid(label, text, "unknown class " + quoted(className), kClassRuleForm, error);
    }
    const std::string_view lhs = text.substr(0, eq);
    const size_t colon = lhs.find(':');
    if (colon == std::string_view::npos || !parseKind(lhs.substr(0, colon), &parsed.kind)) {
        return invalid(
            label, text,
            "unknown rule kind " + quoted(lhs.substr(0, colon)) + " (sym, name, caller or index)",
            kClassRuleForm, error);
    }
    const std::string_view arg = lhs.substr(colon + 1);
    std::string why;
    if (parsed.kind == ClassRule::Kind::index) {
        if (!parseIndexRange(arg, &parsed.first, &parsed.last, &why)) {
            return invalid(label, text, why, kClassRuleForm, error);
        }
    } else {
        if (!validateGlob(arg, &why)) return invalid(label, text, why, kClassRuleForm, error);
        parsed.glob = std::string(arg);
    }
    parsed.text = std::string(text);
    *rule = std::move(parsed);
    return true;
}

}  // namespace detail

// Errors are reported under "--class"; ARBRUN_CLASS uses the labelled form with the rule's
// position.
bool parseClassRule(std::string_view text, ClassRule* rule, std::string* error) {
    return detail::parseClassRuleAs("--class", text, rule, error);
}

// Index ranges of one element are written "N", like users write them.
std::string formatClassRule(const ClassRule& rule) {
    std::string out(ruleKindName(rule.kind));
    out += ':';
    if (rule.kind == ClassRule::Kind::index) {
        out += std::to_string(rule.first);
        if (rule.last != rule.first) {
            out += '-';
            out += std::to_string(rule.last);
        }
    } else {
        out += rule.glob;
    }
    out += '=';
    out += threadClassName(rule.threadClass);
    return out;
}

}  // namespace arbconfig
