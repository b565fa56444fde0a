// arbrun's command line: options -> a validated arbconfig::Config plus the program to run.
#pragma once

#include <string>
#include <vector>

#include "arbconfig/config.h"

namespace arbrun {

// What one `arbrun [options] -- program [args]` asks for. A plain value.
struct Invocation {
    arbconfig::Config config;
    std::vector<std::string> command;  // the program and its arguments; never empty after `run`
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

// Parses argv[1..] (no program name). Options come first; the program starts after the first
// "--", or at the first argument that is neither an option nor an option's value.
ParseResult parseCommandLine(const std::vector<std::string>& args, Invocation* invocation);

}  // namespace arbrun
