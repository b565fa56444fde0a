// Glob matching for class rules (see glob.h). One bracket scanner serves both matching and
// validation, so what validateGlob() accepts is exactly what globMatch() interprets.
#include "arbconfig/glob.h"

#include <cstddef>

namespace arbconfig {
namespace {

constexpr size_t kNone = std::string_view::npos;

// The POSIX character classes, ASCII only: the C locale's meaning, independent of setlocale().
bool inClass(std::string_view name, unsigned char c, bool* known) {
    const bool upper = c >= 'A' && c <= 'Z', lower = c >= 'a' && c <= 'z';
    const bool digit = c >= '0' && c <= '9';
    const bool graph = c > 0x20 && c < 0x7f;
    *known = true;
    if (name == "alpha") return upper || lower;
    if (name == "digit") return digit;
    if (name == "alnum") return upper || lower || digit;
    if (name == "upper") return upper;
    if (name == "lower") return lower;
    if (name == "space") return c == ' ' || (c >= '\t' && c <= '\r');
    if (name == "blank") return c == ' ' || c == '\t';
    if (name == "punct") return graph && !upper && !lower && !digit;
    if (name == "print") return graph || c == ' ';
    if (name == "graph") return graph;
    if (name == "cntrl") return c < 0x20 || c == 0x7f;
    if (name == "xdigit") return digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    *known = false;
    return false;
}

// Length of a "[:name:]" class starting at p[i] (p[i] == '['), or 0 when there is none. Like
// glibc, a name is lowercase letters below 'z'; anything else makes the '[' an ordinary member.
size_t classLength(std::string_view p, size_t i) {
    if (i + 1 >= p.size() || p[i + 1] != ':') return 0;
    size_t j = i + 2;
    while (j < p.size() && p[j] >= 'a' && p[j] < 'z') ++j;
    if (j + 1 < p.size() && p[j] == ':' && p[j + 1] == ']') return j + 2 - i;
    return 0;
}

// What the scan of one bracket expression found.
struct Bracket {
    size_t end = kNone;  // offset just past the closing ']'; kNone when unterminated
    bool matched = false;
    const char* problem = nullptr;  // set only by constructs validateGlob() rejects
};

// Scans the bracket expression opening at p[open] and tests byte c against it.
Bracket scanBracket(std::string_view p, size_t open, unsigned char c) {
    Bracket b;
    size_t j = open + 1;
    bool negate = false;
    if (j < p.size() && (p[j] == '!' || p[j] == '^')) {
        negate = true;
        ++j;
    }
    bool hit = false;
    for (bool first = true;; first = false) {
        if (j >= p.size()) return b;  // unterminated
        if (p[j] == ']' && !first) {
            b.end = j + 1;
            b.matched = hit != negate;
            return b;
        }
        if (const size_t len = classLength(p, j); len != 0) {
            bool known;
            hit |= inClass(p.substr(j + 2, len - 4), c, &known);
            if (!known && !b.problem) b.problem = "unknown character class";
            j += len;
            continue;
        }
        if (p[j] == '[' && j + 1 < p.size() &&
            (p[j + 1] == ':' || p[j + 1] == '.' || p[j + 1] == '=')) {
            if (!b.problem) b.problem = "'[:', '[.' and '[=' must start a class like [:alpha:]";
        }
        unsigned char lo = static_cast<unsigned char>(p[j++]);
        if (lo == '\\') {
            if (j >= p.size()) return b;
            lo = static_cast<unsigned char>(p[j++]);
        }
        if (j + 1 < p.size() && p[j] == '-' && p[j + 1] != ']') {
            size_t k = j + 1;
            unsigned char hi = static_cast<unsigned char>(p[k++]);
            if (hi == '\\') {
                if (k >= p.size()) return b;
                hi = static_cast<unsigned char>(p[k++]);
            } else if (hi == '[' && k < p.size() && (p[k] == ':' || p[k] == '.' || p[k] == '=')) {
                if (!b.problem) b.problem = "a range cannot end in a class";
            }
            if (hi < lo && !b.problem) b.problem = "a range runs backwards";
            hit |= lo <= c && c <= hi;
            j = k;
            continue;
        }
        hit |= c == lo;
    }
}

// Matches one non-'*' pattern element at p[*pi] against byte c; advances *pi past it on a match.
bool matchOne(std::string_view p, size_t* pi, unsigned char c) {
    const size_t i = *pi;
    switch (p[i]) {
        case '?':
            *pi = i + 1;
            return true;
        case '[': {
            const Bracket b = scanBracket(p, i, c);
            if (b.end == kNone) break;  // unterminated: a literal '['
            if (b.matched) *pi = b.end;
            return b.matched;
        }
        case '\\':
            // A lone trailing '\' matches nothing, as in glibc's fnmatch.
            if (i + 1 == p.size() || static_cast<unsigned char>(p[i + 1]) != c) return false;
            *pi = i + 2;
            return true;
        default:
            break;
    }
    if (static_cast<unsigned char>(p[i]) != c) return false;
    *pi = i + 1;
    return true;
}

}  // namespace

// Iterative matching with one backtrack point (the last '*'): every other element consumes exactly
// one byte, so retrying from the last star with one more byte swallowed is complete, and the cost
// is O(|pattern| * |text|) at worst with no recursion and no allocation.
bool globMatch(std::string_view pattern, std::string_view text) {
    size_t pi = 0, ti = 0, starP = kNone, starT = 0;
    while (ti < text.size()) {
        if (pi < pattern.size()) {
            if (pattern[pi] == '*') {
                starP = ++pi;
                starT = ti;
                continue;
            }
            if (matchOne(pattern, &pi, static_cast<unsigned char>(text[ti]))) {
                ++ti;
                continue;
            }
        }
        if (starP == kNone) return false;
        pi = starP;
        ti = ++starT;
    }
    while (pi < pattern.size() && pattern[pi] == '*') ++pi;
    return pi == pattern.size();
}

// Walks the pattern element by element, scanning each bracket once; rejects what fnmatch would
// read in a way a user would not expect (an unclosed '[' silently becoming a literal).
bool validateGlob(std::string_view pattern, std::string* reason) {
    auto fail = [&](std::string why) {
        if (reason) *reason = std::move(why);
        return false;
    };
    if (pattern.empty()) return fail("the pattern is empty (use * to match everything)");
    for (size_t i = 0; i < pattern.size();) {
        if (pattern[i] == '\\') {
            if (i + 1 == pattern.size()) {
                return fail("the pattern ends in a lone '\\' (write \\\\ for a literal '\\')");
            }
            i += 2;
        } else if (pattern[i] == '[') {
            const Bracket b = scanBracket(pattern, i, 0);
            if (b.end == kNone) {
                return fail("'[' at offset " + std::to_string(i) +
                            " is not closed (write \\[ for a literal '[')");
            }
            if (b.problem) {
                return fail(std::string(b.problem) + " (in the '[' at offset " + std::to_string(i) +
                            ")");
            }
            i = b.end;
        } else {
            ++i;
        }
    }
    return true;
}

}  // namespace arbconfig
