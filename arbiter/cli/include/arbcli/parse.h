// Command-line parsing shared by core-arbiter and arbctl: CLI11's outcome turned into what a Unix
// tool does — help on stdout with status 0, a usage error as one line on stderr naming the program
// with status 2. One place, so both tools answer bad input the same way.
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <optional>
#include <string>

namespace arbcli {

constexpr int kExitUsage = 2;

// Parses argv into `app`. nullopt: go on; otherwise the process's exit status (0 after --help or
// --version, kExitUsage after a usage error, already reported as "<program>: <what> (see --help)").
inline std::optional<int> parse(CLI::App& app, int argc, char** argv, const char* program) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        std::cout << app.help();
        return 0;
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e);  // --version and the like
        std::string what = e.what();
        std::replace(what.begin(), what.end(), '\n', ' ');
        std::cerr << program << ": " << what << " (see --help)\n";
        return kExitUsage;
    }
    return std::nullopt;
}

}  // namespace arbcli
