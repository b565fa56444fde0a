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
    const Invocation inv = parseOk({"--cores", "2:4", "--priority", "1", "--class", "sym:w*=batch",
                                    "--class=index:0=exclusive", "--default-class", "batch",
                                    "--arbiter", "/a.sock", "--stats", "--verbose", "--", "prog"});
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
    EXPECT_EQ(inv.command, Args{"prog"});
}

TEST(ParseCommandLine, StandaloneFlag) {
    EXPECT_TRUE(parseOk({"--standalone", "--", "p"}).config.standalone);
}

TEST(ParseCommandLine, LastValueWins) {
    EXPECT_EQ(parseOk({"--priority", "1", "--priority", "6", "--", "p"}).config.priority, 6);
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
    // An earlier bad value is an error even when a later one is good.
    EXPECT_EQ(parseError({"--cores", "0", "--cores", "2", "--", "p"}).rfind("--cores:", 0), 0u);
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

}  // namespace
}  // namespace arbrun
