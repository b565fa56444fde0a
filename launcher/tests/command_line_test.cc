// arbrun's command-line parser in-process: options to Config, where the program starts, and
// every usage error's message.
#include <gtest/gtest.h>

#include "command_line.h"

namespace arbrun {
namespace {

using arbconfig::ThreadClass;
using Args = std::vector<std::string>;

Invocation parseOk(const Args& args) {
    Invocation inv;
    const ParseResult r = parseCommandLine(args, &inv);
    EXPECT_EQ(r.outcome, ParseOutcome::run) << r.text;
    return inv;
}

std::string parseError(const Args& args) {
    Invocation inv;
    const ParseResult r = parseCommandLine(args, &inv);
    EXPECT_EQ(r.outcome, ParseOutcome::usageError);
    EXPECT_EQ(r.text.find('\n'), std::string::npos) << r.text;
    EXPECT_TRUE(inv.command.empty());
    return r.text;
}

TEST(ParseCommandLine, NoOptionsGivesDefaults) {
    const Invocation inv = parseOk({"--", "prog", "a"});
    EXPECT_EQ(inv.config, arbconfig::Config{});
    EXPECT_EQ(inv.command, (Args{"prog", "a"}));
}

TEST(ParseCommandLine, EveryOption) {
    const Invocation inv =
        parseOk({"--cores", "2:4", "--priority", "1", "--class", "sym:w*=batch",
                 "--class=index:0=exclusive", "--default-class", "batch", "--arbiter", "/a.sock",
                 "--stats", "--verbose", "--explain-classes", "--native-syscalls", "--", "prog"});
    EXPECT_EQ(inv.config.minCores, 2u);
    EXPECT_EQ(inv.config.maxCores, 4u);
    EXPECT_EQ(inv.config.priority, 1);
    ASSERT_EQ(inv.config.classRules.size(), 2u);
    EXPECT_EQ(inv.config.classRules[0].text, "sym:w*=batch");
    EXPECT_EQ(inv.config.classRules[1].text, "index:0=exclusive");
    EXPECT_EQ(inv.config.defaultClass, ThreadClass::batch);
    EXPECT_EQ(inv.config.arbiterSocket, "/a.sock");
    EXPECT_FALSE(inv.config.standalone);
    EXPECT_TRUE(inv.config.stats);
    EXPECT_TRUE(inv.config.verbose);
    EXPECT_TRUE(inv.config.explainClasses);
    EXPECT_TRUE(inv.config.nativeSyscalls);
    EXPECT_EQ(inv.command, Args{"prog"});
}

TEST(ParseCommandLine, StandaloneFlag) {
    EXPECT_TRUE(parseOk({"--standalone", "--", "p"}).config.standalone);
}

TEST(ParseCommandLine, LastValueWins) {
    EXPECT_EQ(parseOk({"--priority", "1", "--priority", "6", "--", "p"}).config.priority, 6);
    EXPECT_EQ(parseOk({"--time-slice", "0", "--", "p"}).config.timeSliceUs, 0u);
    EXPECT_EQ(parseOk({"--time-slice", "500", "--", "p"}).config.timeSliceUs, 500u);
    EXPECT_EQ(parseOk({"--", "p"}).config.releaseDeferUs, 1000u);
    EXPECT_EQ(parseOk({"--release-defer", "0", "--", "p"}).config.releaseDeferUs, 0u);
    EXPECT_EQ(parseOk({"--release-defer", "5000", "--", "p"}).config.releaseDeferUs, 5000u);
    EXPECT_EQ(parseOk({"--", "p"}).config.idleSpinUs, 50u);
    EXPECT_EQ(parseOk({"--idle-spin", "0", "--", "p"}).config.idleSpinUs, 0u);
    EXPECT_EQ(parseOk({"--idle-spin", "1000000", "--", "p"}).config.idleSpinUs, 1000000u);
    EXPECT_EQ(parseOk({"--", "p"}).config.retakeAfterUs, 100u);
    EXPECT_EQ(parseOk({"--retake-after", "0", "--", "p"}).config.retakeAfterUs, 0u);
    EXPECT_EQ(parseOk({"--retake-after", "20", "--", "p"}).config.retakeAfterUs, 20u);
    EXPECT_EQ(parseOk({"--retake-after", "1000000", "--", "p"}).config.retakeAfterUs, 1000000u);
    EXPECT_EQ(parseOk({"--trace", "t.csv", "--", "p"}).config.tracePath, "t.csv");
    EXPECT_EQ(parseOk({"--", "p"}).config.dispatch, arbconfig::Dispatch::fifo);
    EXPECT_EQ(parseOk({"--dispatch", "cohort", "--", "p"}).config.dispatch,
              arbconfig::Dispatch::cohort);
    EXPECT_EQ(parseOk({"--dispatch", "cohort", "--dispatch", "fifo", "--", "p"}).config.dispatch,
              arbconfig::Dispatch::fifo);
    EXPECT_EQ(parseOk({"--", "p"}).config.cohortMax, 8u);
    EXPECT_EQ(parseOk({"--cohort-max", "1", "--", "p"}).config.cohortMax, 1u);
    EXPECT_EQ(parseOk({"--cohort-max", "1024", "--", "p"}).config.cohortMax, 1024u);
    EXPECT_EQ(parseOk({"--", "p"}).config.cohortMaxUs, 100u);
    EXPECT_EQ(parseOk({"--cohort-max-us", "1", "--", "p"}).config.cohortMaxUs, 1u);
    EXPECT_EQ(parseOk({"--cohort-max-us=1000000", "--", "p"}).config.cohortMaxUs, 1000000u);
    const arbconfig::EstimatorSettings s =
        parseOk({"--estimator", "fast", "--load-factor", "1.75", "--hysteresis", "20", "--window",
                 "80", "--check-period", "5", "--idle-grace", "10", "--", "p"})
            .config.estimator;
    EXPECT_EQ(s, (arbconfig::EstimatorSettings{arbconfig::Estimator::fast, 1.75, 20, 80, 5, 10}));
}

TEST(ParseCommandLine, ProgramArgumentsAreNotParsed) {
    EXPECT_EQ(parseOk({"--", "prog", "--cores", "x", "--"}).command,
              (Args{"prog", "--cores", "x", "--"}));
    EXPECT_EQ(parseOk({"--", "--weird-name"}).command, Args{"--weird-name"});
}

TEST(ParseCommandLine, DoubleDashIsOptionalBeforeAPlainProgramName) {
    const Invocation inv = parseOk({"--cores", "2", "prog", "--cores", "9", "--", "x"});
    EXPECT_EQ(inv.config.minCores, 2u);
    EXPECT_EQ(inv.command, (Args{"prog", "--cores", "9", "--", "x"}));
}

TEST(ParseCommandLine, ValueThatLooksLikeAnOptionWithEquals) {
    EXPECT_EQ(parseOk({"--arbiter=-odd.sock", "--", "p"}).config.arbiterSocket, "-odd.sock");
}

TEST(ParseCommandLine, HelpAndVersion) {
    Invocation inv;
    ParseResult r = parseCommandLine({"--help"}, &inv);
    EXPECT_EQ(r.outcome, ParseOutcome::done);
    for (const char* needle : {"Usage: arbrun [options] [--] program [args...]",
                               "--cores",
                               "--priority",
                               "--class",
                               "sym:GLOB",
                               "name:GLOB",
                               "caller:GLOB",
                               "index:N[-M]",
                               "--default-class",
                               "--arbiter",
                               "--standalone",
                               "--stats",
                               "--verbose",
                               "--explain-classes",
                               "ARBRUN_EXPLAIN_CLASSES",
                               "--help",
                               "--version",
                               "Examples:",
                               "Exit status:",
                               "127",
                               "126",
                               "ARBRUN_PRELOAD_LIB"}) {
        EXPECT_NE(r.text.find(needle), std::string::npos) << needle;
    }
    EXPECT_EQ(parseCommandLine({"-h"}, &inv).outcome, ParseOutcome::done);
    r = parseCommandLine({"--version"}, &inv);
    EXPECT_EQ(r.outcome, ParseOutcome::done);
    EXPECT_EQ(r.text.rfind("arbrun ", 0), 0u) << r.text;
}

TEST(ParseCommandLine, BadValuesNameTheOptionAndForm) {
    EXPECT_EQ(parseError({"--cores", "0", "--", "p"}),
              "--cores: '0' is not valid: at least one core is needed; expected N, MIN:MAX or "
              "MIN: with 1 <= MIN <= MAX <= 256");
    EXPECT_EQ(parseError({"--priority", "8", "--", "p"}),
              "--priority: '8' is not valid; expected an integer from 0 (highest) to 7 (lowest)");
    EXPECT_EQ(parseError({"--class", "sym:x", "--", "p"}).rfind("--class: 'sym:x' is not valid", 0),
              0u);
    EXPECT_EQ(parseError({"--default-class", "idle", "--", "p"})
                  .rfind("--default-class: 'idle' is not valid", 0),
              0u);
    EXPECT_EQ(parseError({"--arbiter=", "--", "p"}).rfind("--arbiter: a value is required", 0), 0u);
    EXPECT_EQ(parseError({"--trace=", "--", "p"}).rfind("--trace: a value is required", 0), 0u);
    const struct {
        const char* option;
        const char* value;
        const char* form;
    } estimatorCases[] = {
        {"--estimator", "Fast", "arachne or fast"},
        {"--load-factor", "1.0", "a number above 1 and at most 64, e.g. 1.5"},
        {"--load-factor", "65", "a number above 1 and at most 64, e.g. 1.5"},
        {"--load-factor", ".5", "a number above 1 and at most 64, e.g. 1.5"},
        {"--load-factor", "1.", "a number above 1 and at most 64, e.g. 1.5"},
        {"--hysteresis", "0", "a percentage from 1 to 49"},
        {"--window", "60001", "milliseconds from 1 to 60000"},
        {"--check-period", "50001", "microseconds from 5 to 50000"},
        {"--idle-grace", "9", "microseconds from 10 to 60000000, at least twice the check period"},
    };
    for (const auto& c : estimatorCases) {
        const std::string error = parseError({c.option, c.value, "--", "p"});
        EXPECT_EQ(error.rfind(std::string(c.option) + ": '" + c.value + "' is not valid", 0), 0u)
            << error;
        EXPECT_NE(error.find(std::string("expected ") + c.form), std::string::npos) << error;
    }
    EXPECT_EQ(parseError({"--check-period", "100", "--idle-grace", "150", "--", "p"}),
              "--idle-grace: '150' is not valid: idleness is only seen at the check that ends an "
              "idle interval, so it must cover two check periods of 100 us; expected microseconds "
              "from 10 to 60000000, at least twice the check period");
    for (const char* bad : {"99", "1000001", "-1", "1ms", ""}) {
        EXPECT_EQ(parseError({"--time-slice", bad, "--", "p"}),
                  "--time-slice: '" + std::string(bad) +
                      "' is not valid; expected 0 (never preempt) or microseconds from 100 to "
                      "1000000")
            << bad;
    }
    for (const char* bad : {"5001", "-1", "1ms", "", "2.5"}) {
        EXPECT_EQ(parseError({"--release-defer", bad, "--", "p"}),
                  "--release-defer: '" + std::string(bad) +
                      "' is not valid; expected 0 (always preempt) or microseconds up to 5000 "
                      "(half the arbiter's forced-reclaim timeout)")
            << bad;
    }
    for (const char* bad : {"1000001", "-1", "5us", ""}) {
        EXPECT_EQ(parseError({"--idle-spin", bad, "--", "p"}),
                  "--idle-spin: '" + std::string(bad) +
                      "' is not valid; expected microseconds from 0 to 1000000")
            << bad;
    }
    for (const char* bad : {"19", "1000001", "-1", "100us", ""}) {
        EXPECT_EQ(parseError({"--retake-after", bad, "--", "p"}),
                  "--retake-after: '" + std::string(bad) +
                      "' is not valid; expected 0 (off) or microseconds from 20 to 1000000")
            << bad;
    }
    for (const char* bad : {"Cohort", "lifo", "", "fifo,cohort"}) {
        EXPECT_EQ(parseError({"--dispatch", bad, "--", "p"}),
                  "--dispatch: '" + std::string(bad) +
                      "' is not valid: unknown dispatch; expected fifo or cohort")
            << bad;
    }
    for (const char* bad : {"0", "1025", "-1", "8.5", ""}) {
        EXPECT_EQ(parseError({"--cohort-max", bad, "--", "p"}),
                  "--cohort-max: '" + std::string(bad) +
                      "' is not valid; expected an integer from 1 to 1024")
            << bad;
    }
    for (const char* bad : {"0", "1000001", "-5", "100us", ""}) {
        EXPECT_EQ(parseError({"--cohort-max-us", bad, "--", "p"}),
                  "--cohort-max-us: '" + std::string(bad) +
                      "' is not valid; expected microseconds from 1 to 1000000")
            << bad;
    }
    // An earlier bad value is an error even when a later one is good.
    EXPECT_EQ(parseError({"--cores", "0", "--cores", "2", "--", "p"}).rfind("--cores:", 0), 0u);
}

// --trace and --arbiter reject a value they cannot use (not only a missing one).
TEST(ParseCommandLine, BadTraceAndArbiterValues) {
    EXPECT_EQ(parseError({"--trace", "", "--", "p"}),
              "--trace: '' is not valid; expected a file path to write the CSV timeline to");
    EXPECT_EQ(parseError({"--arbiter", std::string(108, 'a'), "--", "p"}),
              "--arbiter: '" + std::string(108, 'a') +
                  "' is not valid: the path is 108 bytes long; expected a Unix socket path of 1 "
                  "to 107 bytes");
}

TEST(ParseCommandLine, MissingValue) {
    EXPECT_EQ(parseError({"--cores"}),
              "--cores: a value is required; expected N, MIN:MAX or MIN: with 1 <= MIN <= MAX "
              "<= 256");
    EXPECT_EQ(
        parseError({"--class", "--", "p"}).rfind("--class: a value is required; expected RULE", 0),
        0u);
    // As with getopt, the argument after an option that takes a value is that value.
    EXPECT_EQ(parseError({"--priority", "--stats", "--", "p"})
                  .rfind("--priority: '--stats' is not valid", 0),
              0u);
}

TEST(ParseCommandLine, FlagsTakeNoValue) {
    EXPECT_EQ(parseError({"--standalone=maybe", "p"}), "--standalone takes no value");
    EXPECT_EQ(parseError({"--stats=2", "p"}), "--stats takes no value");
    EXPECT_EQ(parseError({"--explain-classes=yes", "--", "p"}), "--explain-classes takes no value");
    EXPECT_EQ(parseError({"--native-syscalls=1", "--", "p"}), "--native-syscalls takes no value");
}

TEST(ParseCommandLine, UnknownOption) {
    EXPECT_EQ(parseError({"--bogus", "--", "p"}),
              "unknown option '--bogus'; see 'arbrun --help' for the options");
    EXPECT_EQ(parseError({"-x", "p"}), "unknown option '-x'; see 'arbrun --help' for the options");
    EXPECT_EQ(parseError({"--core", "2", "--", "p"}).rfind("unknown option '--core'", 0), 0u);
}

TEST(ParseCommandLine, StandaloneExcludesArbiter) {
    EXPECT_EQ(parseError({"--standalone", "--arbiter", "/a", "--", "p"})
                  .rfind("--standalone and --arbiter exclude each other", 0),
              0u);
}

TEST(ParseCommandLine, NoProgram) {
    for (const Args& args : {Args{}, Args{"--"}, Args{"--cores", "2"}, Args{"--stats", "--"}}) {
        EXPECT_EQ(parseError(args).rfind("no program given; usage: arbrun [options] -- program", 0),
                  0u);
    }
}

TEST(ParseCommandLine, RunIsTheDefaultSubcommand) {
    const Invocation inv = parseOk({"--", "prog"});
    EXPECT_EQ(inv.subcommand, Subcommand::run);
}

TEST(ParseCommandLine, DoctorDefaults) {
    const Invocation inv = parseOk({"doctor"});
    EXPECT_EQ(inv.subcommand, Subcommand::doctor);
    EXPECT_EQ(inv.config, arbconfig::Config{});
    EXPECT_TRUE(inv.command.empty());
}

TEST(ParseCommandLine, DoctorArbiter) {
    EXPECT_EQ(parseOk({"doctor", "--arbiter", "/x.sock"}).config.arbiterSocket, "/x.sock");
    EXPECT_EQ(parseOk({"doctor", "--arbiter=/y.sock", "--"}).config.arbiterSocket, "/y.sock");
}

TEST(ParseCommandLine, DoctorRejectsArgumentsAndRunOptions) {
    EXPECT_EQ(parseError({"doctor", "x"}),
              "unexpected argument 'x'; usage: arbrun doctor [--arbiter PATH] (see arbrun doctor "
              "--help)");
    EXPECT_EQ(parseError({"doctor", "--cores", "2"}),
              "unknown option '--cores'; see 'arbrun doctor --help' for the options");
    EXPECT_EQ(parseError({"doctor", "--arbiter"}),
              "--arbiter: a value is required; expected a Unix socket path of 1 to 107 bytes");
    EXPECT_EQ(parseError({"doctor", "--arbiter", std::string(200, 'a')}).rfind("--arbiter: '", 0),
              0u);
}

TEST(ParseCommandLine, AbRunsAndOptions) {
    const Invocation inv =
        parseOk({"ab", "-n", "3", "--cores", "2", "--standalone", "--", "prog", "-n", "9"});
    EXPECT_EQ(inv.subcommand, Subcommand::ab);
    EXPECT_EQ(inv.runs, 3);
    EXPECT_EQ(inv.config.minCores, 2u);
    EXPECT_TRUE(inv.config.standalone);
    EXPECT_EQ(inv.command, (Args{"prog", "-n", "9"}));
}

TEST(ParseCommandLine, AbDefaults) {
    const Invocation inv = parseOk({"ab", "prog"});
    EXPECT_EQ(inv.subcommand, Subcommand::ab);
    EXPECT_EQ(inv.runs, kDefaultAbRuns);
    EXPECT_EQ(inv.config, arbconfig::Config{});
    EXPECT_EQ(inv.command, Args{"prog"});
}

TEST(ParseCommandLine, AbRunsForms) {
    EXPECT_EQ(parseOk({"ab", "--runs", "7", "p"}).runs, 7);
    EXPECT_EQ(parseOk({"ab", "--runs=4", "p"}).runs, 4);
    EXPECT_EQ(parseOk({"ab", "-n1000", "p"}).runs, 1000);
    EXPECT_EQ(parseOk({"ab", "--priority", "1", "-n", "2", "--", "p"}).runs, 2);
    EXPECT_EQ(parseOk({"ab", "-n", "2", "-n", "6", "p"}).runs, 6);  // the last one wins
}

TEST(ParseCommandLine, AbBadRuns) {
    for (const char* bad : {"0", "1001", "x", "2.5", "+3", " 3", ""}) {
        EXPECT_EQ(parseError({"ab", "-n", bad, "--", "p"}),
                  "-n: '" + std::string(bad) + "' is not valid; expected an integer from 1 to 1000")
            << bad;
    }
    EXPECT_EQ(parseError({"ab", "-n"}),
              "-n: a value is required; expected an integer from 1 to 1000");
    EXPECT_EQ(parseError({"ab", "--runs=x", "p"}).rfind("-n: 'x' is not valid", 0), 0u);
}

TEST(ParseCommandLine, AbNeedsAProgram) {
    for (const Args& args : {Args{"ab"}, Args{"ab", "-n", "2"}, Args{"ab", "--"}}) {
        EXPECT_EQ(parseError(args),
                  "no program given; usage: arbrun ab [-n RUNS] [options] -- program [args] (see "
                  "arbrun ab --help)");
    }
}

TEST(ParseCommandLine, AbOptionErrorsNameAb) {
    EXPECT_EQ(parseError({"ab", "--bogus", "p"}),
              "unknown option '--bogus'; see 'arbrun ab --help' for the options");
    EXPECT_EQ(parseError({"ab", "--standalone", "--arbiter", "/a", "p"})
                  .rfind("--standalone and --arbiter exclude each other", 0),
              0u);
    EXPECT_EQ(parseError({"ab", "--cores", "0", "p"}).rfind("--cores: '0' is not valid", 0), 0u);
}

// Only the first argument names a subcommand: programs called doctor or ab still run.
TEST(ParseCommandLine, SubcommandNamesElsewhereAreThePrograms) {
    Invocation inv = parseOk({"--", "ab", "-n", "1"});
    EXPECT_EQ(inv.subcommand, Subcommand::run);
    EXPECT_EQ(inv.command, (Args{"ab", "-n", "1"}));
    inv = parseOk({"--cores", "2", "doctor"});
    EXPECT_EQ(inv.subcommand, Subcommand::run);
    EXPECT_EQ(inv.command, Args{"doctor"});
    inv = parseOk({"ab", "--", "ab"});
    EXPECT_EQ(inv.subcommand, Subcommand::ab);
    EXPECT_EQ(inv.command, Args{"ab"});
}

TEST(ParseCommandLine, SubcommandHelp) {
    Invocation inv;
    ParseResult r = parseCommandLine({"--help"}, &inv);
    for (const char* needle :
         {"arbrun doctor [--arbiter PATH]", "arbrun ab [-n RUNS] [options] [--] program [args...]",
          "Subcommands", "'arbrun -- doctor'"}) {
        EXPECT_NE(r.text.find(needle), std::string::npos) << needle;
    }
    r = parseCommandLine({"doctor", "--help"}, &inv);
    EXPECT_EQ(r.outcome, ParseOutcome::done);
    for (const char* needle : {"Usage: arbrun doctor [--arbiter PATH]", "--arbiter", "FSGSBASE",
                               "Exit status:", "at least one check FAILed"}) {
        EXPECT_NE(r.text.find(needle), std::string::npos) << needle;
    }
    EXPECT_EQ(r.text.find("--cores"), std::string::npos);
    r = parseCommandLine({"ab", "-h"}, &inv);
    EXPECT_EQ(r.outcome, ParseOutcome::done);
    for (const char* needle :
         {"Usage: arbrun ab [-n RUNS] [options] [--] program [args...]", "-n,--runs", "--cores",
          "--standalone", "stdout", "/dev/null", "Exit status:", "127"}) {
        EXPECT_NE(r.text.find(needle), std::string::npos) << needle;
    }
}

}  // namespace
}  // namespace arbrun
