// arbrun's command line: options -> a validated arbconfig::Config plus the program to run, or one
// of the subcommands (`arbrun doctor`, `arbrun ab`).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "arbconfig/config.h"

namespace arbrun {

// What the first argument selects. Only the very first argument names a subcommand; a program
// called "doctor" or "ab" runs after a "--" (`arbrun -- ab ...`).
enum class Subcommand {
    run,     // arbrun [options] [--] program [args]: exec the program under the preload library
    doctor,  // arbrun doctor [--arbiter PATH]: check the machine
    ab,      // arbrun ab [-n RUNS] [options] [--] program [args]: native vs arbrun comparison
};

// `arbrun ab -n RUNS`: pairs of runs, each mode once per pair.
inline constexpr int kDefaultAbRuns = 5;
inline constexpr int kMaxAbRuns = 1000;
inline constexpr std::string_view kAbRunsForm = "an integer from 1 to 1000";

// What one command line asks for. A plain value.
struct Invocation {
    Subcommand subcommand = Subcommand::run;
    arbconfig::Config config;          // doctor: only arbiterSocket is set from the options
    std::vector<std::string> command;  // run and ab: the program and its arguments, never empty
    int runs = kDefaultAbRuns;         // ab: -n
};

enum class ParseOutcome {
    run,         // *invocation is filled in
    done,        // --help or --version: print `text` to stdout, exit 0
    usageError,  // print "arbrun: " + `text` to stderr, exit 2
};

struct ParseResult {
    ParseOutcome outcome = ParseOutcome::run;
    std::string text;  // help/version text, or a one-line error naming the option and its form
};

// Parses argv[1..] (no program name). A first argument "doctor" or "ab" selects that subcommand.
// Options come first; the program starts after the first "--", or at the first argument that is
// neither an option nor an option's value.
ParseResult parseCommandLine(const std::vector<std::string>& args, Invocation* invocation);

}  // namespace arbrun
