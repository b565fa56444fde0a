// globMatch against hand-picked cases and, differentially, against glibc's fnmatch(3) (flags 0,
// C locale) on random patterns and texts from a fixed seed; validateGlob's verdicts.
#include <arbconfig/glob.h>
#include <fnmatch.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

namespace arbconfig {
namespace {

TEST(GlobMatch, Literals) {
    EXPECT_TRUE(globMatch("worker", "worker"));
    EXPECT_FALSE(globMatch("worker", "worker2"));
    EXPECT_FALSE(globMatch("worker2", "worker"));
    EXPECT_FALSE(globMatch("Worker", "worker"));
    EXPECT_TRUE(globMatch("", ""));
    EXPECT_FALSE(globMatch("", "a"));
}

TEST(GlobMatch, Stars) {
    EXPECT_TRUE(globMatch("*", ""));
    EXPECT_TRUE(globMatch("*", "anything/at.all"));
    EXPECT_TRUE(globMatch("work*", "worker_main"));
    EXPECT_TRUE(globMatch("*main", "worker_main"));
    EXPECT_TRUE(globMatch("*_*_*", "a_b_c"));
    EXPECT_FALSE(globMatch("*_*_*", "a_b"));
    EXPECT_TRUE(globMatch("a**b", "ab"));
    EXPECT_TRUE(globMatch("*aab", "aaaab"));  // needs backtracking
    EXPECT_TRUE(globMatch("*.hidden", ".x.hidden"));
    EXPECT_TRUE(globMatch("ns::*::run", "ns::Pool::run"));
}

TEST(GlobMatch, QuestionMarks) {
    EXPECT_TRUE(globMatch("io-?", "io-3"));
    EXPECT_FALSE(globMatch("io-?", "io-"));
    EXPECT_FALSE(globMatch("io-?", "io-12"));
    EXPECT_TRUE(globMatch("??", "\xc3\xa9"));  // bytes, not characters
}

TEST(GlobMatch, Brackets) {
    EXPECT_TRUE(globMatch("io-[0-9]", "io-7"));
    EXPECT_FALSE(globMatch("io-[0-9]", "io-x"));
    EXPECT_TRUE(globMatch("[!0-9]", "x"));
    EXPECT_FALSE(globMatch("[^0-9]", "5"));
    EXPECT_TRUE(globMatch("[]]", "]"));
    EXPECT_TRUE(globMatch("[!]]", "a"));
    EXPECT_TRUE(globMatch("[a-]", "-"));
    EXPECT_TRUE(globMatch("[[:digit:]x]", "x"));
    EXPECT_TRUE(globMatch("[[:upper:]]", "Q"));
    EXPECT_FALSE(globMatch("[[:upper:]]", "q"));
    EXPECT_TRUE(globMatch("[\\]]", "]"));
    EXPECT_TRUE(globMatch("[", "["));  // unterminated: literal, as fnmatch
    EXPECT_TRUE(globMatch("a[b", "a[b"));
}

TEST(GlobMatch, Escapes) {
    EXPECT_TRUE(globMatch("\\*", "*"));
    EXPECT_FALSE(globMatch("\\*", "x"));
    EXPECT_TRUE(globMatch("operator\\[\\]", "operator[]"));
    EXPECT_TRUE(globMatch("a\\\\b", "a\\b"));
    EXPECT_FALSE(globMatch("a\\", "a\\"));  // lone trailing '\' matches nothing, as fnmatch
    EXPECT_FALSE(globMatch("a\\", "a"));
}

TEST(ValidateGlob, AcceptsWellFormedPatterns) {
    for (const char* ok : {"*", "a", "worker*", "io-[0-9]", "[!a-z]*", "[]]", "[[:alpha:]_]*",
                           "\\[x\\]", "a\\\\", "ns::*::run", "[a-]", "[\\[]"}) {
        std::string reason;
        EXPECT_TRUE(validateGlob(ok, &reason)) << ok << ": " << reason;
    }
}

TEST(ValidateGlob, RejectsWithAReason) {
    const struct {
        const char* pattern;
        const char* reason;
    } cases[] = {
        {"", "empty"},
        {"abc\\", "lone '\\'"},
        {"[abc", "'[' at offset 0 is not closed"},
        {"x[", "'[' at offset 1 is not closed"},
        {"[]", "not closed"},
        {"[!]", "not closed"},
        {"[[:nope:]]", "unknown character class"},
        {"[[:alpha]", "must start a class"},
        {"[[.a.]]", "must start a class"},
        {"[[=a=]]", "must start a class"},
        {"[a-[:digit:]]", "cannot end in a class"},
        {"[9-0]", "runs backwards"},
        {"[a\\", "not closed"},
    };
    for (const auto& c : cases) {
        std::string reason;
        EXPECT_FALSE(validateGlob(c.pattern, &reason)) << c.pattern;
        EXPECT_NE(reason.find(c.reason), std::string::npos) << c.pattern << " -> " << reason;
    }
}

// Random patterns built from the tokens that make globs interesting, on texts over a small
// alphabet so matches are frequent. Every pattern validateGlob accepts must agree with fnmatch.
// (The rejected ones differ only in collating elements and equivalence classes, which glibc
// supports and this matcher does not.)
TEST(GlobMatch, AgreesWithFnmatchOnRandomPatterns) {
    static constexpr std::string_view kTokens[] = {
        "a",  "b",         "z",         "-",         "]",         "!",  "^",   ":",
        ".",  "/",         "\xc3",      "*",         "*",         "?",  "[",   "[",
        "\\", "[:alpha:]", "[:digit:]", "[:punct:]", "[:space:]", "[!", "a-c", "\\]"};
    static const char kAlphabet[] = "abz-]![:./\\\xc3 0A";
    std::mt19937 rng(20240611);
    auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
    int valid = 0, agreedValid = 0;
    for (int round = 0; round < 20000; ++round) {
        std::string pattern;
        for (size_t n = pick(7); n > 0; --n) {
            const std::string_view token = kTokens[pick(std::size(kTokens))];
            pattern.append(token.data(), token.size());
        }
        if (pattern.empty()) pattern.push_back('*');
        const bool isValid = validateGlob(pattern, nullptr);
        for (int t = 0; t < 8; ++t) {
            std::string text;
            for (size_t n = pick(6); n > 0; --n)
                text.push_back(kAlphabet[pick(sizeof(kAlphabet) - 1)]);
            const bool ours = globMatch(pattern, text);
            const bool theirs = fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
            if (isValid) {
                ++valid;
                agreedValid += ours == theirs;
                ASSERT_EQ(ours, theirs) << "pattern '" << pattern << "' text '" << text << "'";
            }
        }
    }
    EXPECT_GT(valid, 20000);  // the generator produced plenty of valid patterns
    EXPECT_EQ(agreedValid, valid);
}

}  // namespace
}  // namespace arbconfig
