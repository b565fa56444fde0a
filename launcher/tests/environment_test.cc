// The ARBRUN_* environment format: exact values written, random configurations round-tripping
// (fixed seed), unset and empty variables keeping defaults, and every kind of malformed value.
#include <arbconfig/config.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

namespace arbconfig {
namespace {

using Env = std::map<std::string, std::string>;

Env asMap(const Config& config) {
    Env env;
    for (auto& [name, value] : toEnvironment(config)) env[name] = value;
    return env;
}

// fromEnvironment with `env` as the whole environment.
bool readEnv(const Env& env, Config* config, std::string* error) {
    return fromEnvironment(
        [&](const char* name) -> const char* {
            auto it = env.find(name);
            return it == env.end() ? nullptr : it->second.c_str();
        },
        config, error);
}

ClassRule rule(std::string_view text) {
    ClassRule r;
    std::string error;
    EXPECT_TRUE(parseClassRule(text, &r, &error)) << error;
    return r;
}

TEST(ToEnvironment, DefaultsWriteEveryVariableInOrder) {
    const auto env = toEnvironment(Config{});
    const std::vector<std::pair<std::string, std::string>> expected = {
        {"ARBRUN_CORES", "1:"},
        {"ARBRUN_PRIORITY", "3"},
        {"ARBRUN_CLASS", ""},
        {"ARBRUN_DEFAULT_CLASS", "normal"},
        {"ARBRUN_ARBITER", "/run/arbrun/arbiter.sock"},
        {"ARBRUN_STANDALONE", "0"},
        {"ARBRUN_STATS", "0"},
        {"ARBRUN_VERBOSE", "0"},
        {"ARBRUN_TIME_SLICE_US", "1000"},
        {"ARBRUN_RELEASE_DEFER_US", "1000"},
        {"ARBRUN_IDLE_SPIN_US", "50"},
        {"ARBRUN_RETAKE_AFTER_US", "100"},
        {"ARBRUN_TRACE", ""},
        {"ARBRUN_ESTIMATOR", "arachne"},
        {"ARBRUN_LOAD_FACTOR", "1.5"},
        {"ARBRUN_HYSTERESIS_PCT", "9"},
        {"ARBRUN_WINDOW_MS", "50"},
        {"ARBRUN_CHECK_PERIOD_US", "10"},
        {"ARBRUN_IDLE_GRACE_US", "250"},
        {"ARBRUN_EXPLAIN_CLASSES", "0"},
        {"ARBRUN_NATIVE_SYSCALLS", "0"},
        {"ARBRUN_DISPATCH", "fifo"},
        {"ARBRUN_COHORT_MAX", "8"},
        {"ARBRUN_COHORT_MAX_US", "100"},
    };
    EXPECT_EQ(env, expected);
}

TEST(ToEnvironment, ValuesOfEveryField) {
    Config c;
    c.minCores = 2;
    c.maxCores = 6;
    c.priority = 0;
    c.classRules = {rule("sym:enc*=batch"), rule("index:0=exclusive")};
    c.defaultClass = ThreadClass::batch;
    c.arbiterSocket = "/tmp/x.sock";
    c.standalone = c.stats = c.verbose = c.explainClasses = c.nativeSyscalls = true;
    c.timeSliceUs = 0;
    c.releaseDeferUs = 2500;
    c.idleSpinUs = 7;
    c.retakeAfterUs = 250;
    c.tracePath = "out/trace.csv";
    c.estimator = {Estimator::fast, 2.25, 12, 100, 20, 400};
    c.dispatch = Dispatch::cohort;
    c.cohortMax = 3;
    c.cohortMaxUs = 40;
    const Env env = asMap(c);
    EXPECT_EQ(env.at("ARBRUN_DISPATCH"), "cohort");
    EXPECT_EQ(env.at("ARBRUN_COHORT_MAX"), "3");
    EXPECT_EQ(env.at("ARBRUN_COHORT_MAX_US"), "40");
    EXPECT_EQ(env.at("ARBRUN_CORES"), "2:6");
    EXPECT_EQ(env.at("ARBRUN_PRIORITY"), "0");
    EXPECT_EQ(env.at("ARBRUN_CLASS"), "sym:enc*=batch;index:0=exclusive");
    EXPECT_EQ(env.at("ARBRUN_DEFAULT_CLASS"), "batch");
    EXPECT_EQ(env.at("ARBRUN_ARBITER"), "/tmp/x.sock");
    EXPECT_EQ(env.at("ARBRUN_STANDALONE"), "1");
    EXPECT_EQ(env.at("ARBRUN_STATS"), "1");
    EXPECT_EQ(env.at("ARBRUN_VERBOSE"), "1");
    EXPECT_EQ(env.at("ARBRUN_EXPLAIN_CLASSES"), "1");
    EXPECT_EQ(env.at("ARBRUN_NATIVE_SYSCALLS"), "1");
    EXPECT_EQ(env.at("ARBRUN_TIME_SLICE_US"), "0");
    EXPECT_EQ(env.at("ARBRUN_RELEASE_DEFER_US"), "2500");
    EXPECT_EQ(env.at("ARBRUN_IDLE_SPIN_US"), "7");
    EXPECT_EQ(env.at("ARBRUN_RETAKE_AFTER_US"), "250");
    EXPECT_EQ(env.at("ARBRUN_TRACE"), "out/trace.csv");
    EXPECT_EQ(env.at("ARBRUN_ESTIMATOR"), "fast");
    EXPECT_EQ(env.at("ARBRUN_LOAD_FACTOR"), "2.25");
    EXPECT_EQ(env.at("ARBRUN_HYSTERESIS_PCT"), "12");
    EXPECT_EQ(env.at("ARBRUN_WINDOW_MS"), "100");
    EXPECT_EQ(env.at("ARBRUN_CHECK_PERIOD_US"), "20");
    EXPECT_EQ(env.at("ARBRUN_IDLE_GRACE_US"), "400");
    Config back;
    ASSERT_TRUE(readEnv(env, &back, nullptr));
    EXPECT_EQ(back.estimator, c.estimator);
    EXPECT_EQ(back.dispatch, Dispatch::cohort);
    EXPECT_EQ(back.cohortMax, 3u);
    EXPECT_EQ(back.cohortMaxUs, 40u);
    c.maxCores = 2;
    EXPECT_EQ(asMap(c).at("ARBRUN_CORES"), "2");
}

TEST(ToEnvironment, SemicolonAndPercentInRulesArePercentEncoded) {
    Config c;
    c.classRules = {rule("name:a;b=batch"), rule("name:100%=normal")};
    EXPECT_EQ(asMap(c).at("ARBRUN_CLASS"), "name:a%3Bb=batch;name:100%25=normal");
    Config back;
    ASSERT_TRUE(readEnv(asMap(c), &back, nullptr));
    EXPECT_EQ(back.classRules, c.classRules);
    EXPECT_EQ(back.classRules[0].glob, "a;b");
}

TEST(ToEnvironment, KeepsTheRuleAsWritten) {
    Config c;
    c.classRules = {rule("index:3-3=batch")};
    EXPECT_EQ(asMap(c).at("ARBRUN_CLASS"), "index:3-3=batch");
}

TEST(ToEnvironment, CanonicalTextForHandBuiltOrStaleRules) {
    ClassRule built;
    built.kind = ClassRule::Kind::index;
    built.first = 2;
    built.last = 9;
    built.threadClass = ThreadClass::batch;
    ClassRule stale = rule("sym:a*=batch");
    stale.glob = "b*";  // text no longer describes the rule
    Config c;
    c.classRules = {built, stale};
    EXPECT_EQ(asMap(c).at("ARBRUN_CLASS"), "index:2-9=batch;sym:b*=batch");
}

TEST(FromEnvironment, UnsetAndEmptyVariablesKeepValues) {
    Config c;
    c.priority = 5;
    c.classRules = {rule("name:x=batch")};
    const Config before = c;
    ASSERT_TRUE(readEnv({}, &c, nullptr));
    EXPECT_EQ(c, before);
    Env empty;
    for (auto& [name, value] : toEnvironment(Config{})) empty[name] = "";
    ASSERT_TRUE(readEnv(empty, &c, nullptr));
    EXPECT_EQ(c, before);
}

TEST(FromEnvironment, ReadsEachVariable) {
    const Env env = {{"ARBRUN_CORES", "2:"},
                     {"ARBRUN_PRIORITY", "7"},
                     {"ARBRUN_CLASS", "name:io*=exclusive;;index:1-2=batch;"},
                     {"ARBRUN_DEFAULT_CLASS", "batch"},
                     {"ARBRUN_ARBITER", "/a.sock"},
                     {"ARBRUN_STANDALONE", "yes"},
                     {"ARBRUN_STATS", "true"},
                     {"ARBRUN_VERBOSE", "on"},
                     {"ARBRUN_TIME_SLICE_US", "250"},
                     {"ARBRUN_RELEASE_DEFER_US", "0"},
                     {"ARBRUN_IDLE_SPIN_US", "3"},
                     {"ARBRUN_RETAKE_AFTER_US", "0"},
                     {"ARBRUN_TRACE", "/tmp/t.csv"},
                     {"ARBRUN_EXPLAIN_CLASSES", "1"},
                     {"ARBRUN_NATIVE_SYSCALLS", "1"}};
    Config c;
    std::string error;
    ASSERT_TRUE(readEnv(env, &c, &error)) << error;
    EXPECT_EQ(c.minCores, 2u);
    EXPECT_EQ(c.maxCores, 0u);
    EXPECT_EQ(c.priority, 7);
    ASSERT_EQ(c.classRules.size(), 2u);
    EXPECT_EQ(c.classRules[0].text, "name:io*=exclusive");
    EXPECT_EQ(c.classRules[1].text, "index:1-2=batch");
    EXPECT_EQ(c.defaultClass, ThreadClass::batch);
    EXPECT_EQ(c.arbiterSocket, "/a.sock");
    EXPECT_TRUE(c.standalone);
    EXPECT_TRUE(c.stats);
    EXPECT_TRUE(c.verbose);
    EXPECT_EQ(c.timeSliceUs, 250u);
    EXPECT_EQ(c.releaseDeferUs, 0u);
    EXPECT_EQ(c.idleSpinUs, 3u);
    EXPECT_EQ(c.retakeAfterUs, 0u);
    EXPECT_EQ(c.tracePath, "/tmp/t.csv");
    EXPECT_TRUE(c.explainClasses);
    EXPECT_TRUE(c.nativeSyscalls);
}

TEST(FromEnvironment, BooleanForms) {
    for (const char* yes : {"1", "true", "yes", "on"}) {
        Config c;
        ASSERT_TRUE(readEnv({{"ARBRUN_STATS", yes}}, &c, nullptr)) << yes;
        EXPECT_TRUE(c.stats);
    }
    for (const char* no : {"0", "false", "no", "off"}) {
        Config c;
        c.stats = true;
        ASSERT_TRUE(readEnv({{"ARBRUN_STATS", no}}, &c, nullptr)) << no;
        EXPECT_FALSE(c.stats);
    }
}

TEST(FromEnvironment, LowercasePercentEscapeAccepted) {
    Config c;
    ASSERT_TRUE(readEnv({{"ARBRUN_CLASS", "name:a%3bb=batch"}}, &c, nullptr));
    EXPECT_EQ(c.classRules.at(0).glob, "a;b");
}

// Every variable with a malformed value: false, the variable named with the accepted form, and
// the configuration untouched (even variables read before the bad one).
TEST(FromEnvironment, RejectsMalformedValuesNamingTheVariable) {
    const std::string longPath(kMaxSocketPathBytes + 1, 'p');
    const struct {
        const char* name;
        const char* value;
        const char* expect;
    } cases[] = {
        {"ARBRUN_CORES", "0", "ARBRUN_CORES: '0' is not valid"},
        {"ARBRUN_CORES", "3:1", "ARBRUN_CORES: '3:1' is not valid"},
        {"ARBRUN_PRIORITY", "9", "ARBRUN_PRIORITY: '9' is not valid"},
        {"ARBRUN_CLASS", "sym:a=batch;bogus", "ARBRUN_CLASS rule 2: 'bogus' is not valid"},
        {"ARBRUN_CLASS", "name:[x=batch", "ARBRUN_CLASS rule 1: 'name:[x=batch' is not valid"},
        {"ARBRUN_CLASS", "name:100%=batch", "ARBRUN_CLASS rule 1: 'name:100%=batch' is not valid"},
        {"ARBRUN_CLASS", "name:%3=batch", "'%' must start %25"},
        {"ARBRUN_DEFAULT_CLASS", "idle", "ARBRUN_DEFAULT_CLASS: 'idle' is not valid"},
        {"ARBRUN_ARBITER", longPath.c_str(), "ARBRUN_ARBITER: '"},
        {"ARBRUN_STANDALONE", "2", "ARBRUN_STANDALONE: '2' is not valid"},
        {"ARBRUN_STATS", "TRUE", "ARBRUN_STATS: 'TRUE' is not valid"},
        {"ARBRUN_VERBOSE", "maybe", "ARBRUN_VERBOSE: 'maybe' is not valid"},
        {"ARBRUN_TIME_SLICE_US", "99", "ARBRUN_TIME_SLICE_US: '99' is not valid"},
        {"ARBRUN_TIME_SLICE_US", "1000001", "ARBRUN_TIME_SLICE_US: '1000001' is not valid"},
        {"ARBRUN_RELEASE_DEFER_US", "5001", "ARBRUN_RELEASE_DEFER_US: '5001' is not valid"},
        {"ARBRUN_RELEASE_DEFER_US", "x", "ARBRUN_RELEASE_DEFER_US: 'x' is not valid"},
        {"ARBRUN_IDLE_SPIN_US", "1000001", "ARBRUN_IDLE_SPIN_US: '1000001' is not valid"},
        {"ARBRUN_RETAKE_AFTER_US", "10", "ARBRUN_RETAKE_AFTER_US: '10' is not valid"},
        {"ARBRUN_RETAKE_AFTER_US", "1ms", "ARBRUN_RETAKE_AFTER_US: '1ms' is not valid"},
        {"ARBRUN_ESTIMATOR", "shenango", "ARBRUN_ESTIMATOR: 'shenango' is not valid"},
        {"ARBRUN_LOAD_FACTOR", "1", "ARBRUN_LOAD_FACTOR: '1' is not valid"},
        {"ARBRUN_LOAD_FACTOR", "1.5e0", "ARBRUN_LOAD_FACTOR: '1.5e0' is not valid"},
        {"ARBRUN_HYSTERESIS_PCT", "50", "ARBRUN_HYSTERESIS_PCT: '50' is not valid"},
        {"ARBRUN_WINDOW_MS", "0", "ARBRUN_WINDOW_MS: '0' is not valid"},
        {"ARBRUN_CHECK_PERIOD_US", "4", "ARBRUN_CHECK_PERIOD_US: '4' is not valid"},
        {"ARBRUN_IDLE_GRACE_US", "15", "ARBRUN_IDLE_GRACE_US: '15' is not valid: idleness"},
        {"ARBRUN_EXPLAIN_CLASSES", "all", "ARBRUN_EXPLAIN_CLASSES: 'all' is not valid"},
        {"ARBRUN_NATIVE_SYSCALLS", "2", "ARBRUN_NATIVE_SYSCALLS: '2' is not valid"},
        {"ARBRUN_DISPATCH", "lifo", "ARBRUN_DISPATCH: 'lifo' is not valid"},
        {"ARBRUN_COHORT_MAX", "0", "ARBRUN_COHORT_MAX: '0' is not valid"},
        {"ARBRUN_COHORT_MAX", "1025", "ARBRUN_COHORT_MAX: '1025' is not valid"},
        {"ARBRUN_COHORT_MAX_US", "0", "ARBRUN_COHORT_MAX_US: '0' is not valid"},
        {"ARBRUN_COHORT_MAX_US", "1000001", "ARBRUN_COHORT_MAX_US: '1000001' is not valid"},
    };
    for (const auto& c : cases) {
        Env env = {{"ARBRUN_CORES", "4"}, {"ARBRUN_PRIORITY", "1"}};
        env[c.name] = c.value;
        Config config;
        std::string error;
        EXPECT_FALSE(readEnv(env, &config, &error)) << c.name << "=" << c.value;
        EXPECT_NE(error.find(c.expect), std::string::npos) << error;
        EXPECT_NE(error.find("; expected "), std::string::npos) << error;
        EXPECT_EQ(error.find('\n'), std::string::npos) << error;
        EXPECT_EQ(config, Config{}) << "changed on error: " << c.name;
    }
}

// Random configurations from a fixed seed: everything toEnvironment writes, fromEnvironment reads
// back to an equal Config (rules built without text come back with their canonical text).
class RandomConfigs {
  public:
    explicit RandomConfigs(uint32_t seed) : rng_(seed) {}

    Config next() {
        Config c;
        c.minCores = uint32_t(between(1, kMaxCores));
        c.maxCores = coin() ? 0 : uint32_t(between(c.minCores, kMaxCores));
        c.priority = int(between(0, kLowestPriority));
        for (size_t n = between(0, 5); n > 0; --n) c.classRules.push_back(nextRule());
        c.defaultClass = nextClass();
        c.arbiterSocket = text(between(1, kMaxSocketPathBytes), "/abc.;%= :\\\x7f\xff");
        c.standalone = coin();
        c.stats = coin();
        c.verbose = coin();
        c.explainClasses = coin();
        c.nativeSyscalls = coin();
        c.retakeAfterUs =
            coin() ? 0
                   : uint32_t(between(arbconfig::kMinRetakeAfterUs, arbconfig::kMaxRetakeAfterUs));
        return c;
    }

  private:
    uint64_t between(uint64_t lo, uint64_t hi) {
        return std::uniform_int_distribution<uint64_t>(lo, hi)(rng_);
    }
    bool coin() { return between(0, 1) == 1; }
    ThreadClass nextClass() { return ThreadClass(between(0, 2)); }
    std::string text(size_t n, std::string_view alphabet) {
        std::string out;
        while (out.size() < n) out += alphabet[between(0, alphabet.size() - 1)];
        return out;
    }

    ClassRule nextRule() {
        ClassRule r;
        r.kind = ClassRule::Kind(between(0, 3));
        r.threadClass = nextClass();
        if (r.kind == ClassRule::Kind::index) {
            r.first = coin() ? between(0, 20) : between(0, ~uint64_t{0} - 1);
            r.last = coin() ? r.first : between(r.first, ~uint64_t{0});
        } else {
            static const char* const kTokens[] = {"a",    "Z",   "*", "?",  "[0-9]",
                                                  "[!x]", ":",   "=", ";",  "%",
                                                  "%3B",  "\\*", " ", "::", "\xc3\xa9"};
            for (size_t n = between(1, 6); n > 0; --n) r.glob += kTokens[between(0, 14)];
        }
        const std::string canonical = formatClassRule(r);
        if (coin()) {
            std::string error;
            EXPECT_TRUE(parseClassRule(canonical, &r, &error)) << error;
        }  // else: text stays empty, as for a rule built in code
        return r;
    }

    std::mt19937_64 rng_;
};

TEST(Environment, RandomConfigsRoundTrip) {
    RandomConfigs random(0xA5B0C0DEu);
    for (int i = 0; i < 2000; ++i) {
        Config c = random.next();
        Config back;
        std::string error;
        ASSERT_TRUE(readEnv(asMap(c), &back, &error)) << error;
        for (ClassRule& r : c.classRules) {
            if (r.text.empty()) r.text = formatClassRule(r);
        }
        ASSERT_EQ(back, c) << "iteration " << i << ", ARBRUN_CLASS=" << asMap(c).at("ARBRUN_CLASS");
        // And a second trip changes nothing.
        EXPECT_EQ(asMap(back), asMap(c));
    }
}

}  // namespace
}  // namespace arbconfig
