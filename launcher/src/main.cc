// arbrun: options -> Config -> environment -> exec, or one of the subcommands. Each step lives in
// its own file.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "command_line.h"
#include "launch.h"
#include "preload_library.h"
#include "program_check.h"
#include "subcommands.h"

namespace {

// Every error leaves as one line with the program's name, like other Unix tools.
int fail(int status, const std::string& message) {
    std::fprintf(stderr, "arbrun: %s\n", message.c_str());
    return status;
}

// --verbose: the exact environment handed to the program, one line.
void describe(const arbrun::Environment& environment, const std::string& program) {
    std::string line = "arbrun: running '" + program + "' with";
    for (const auto& [name, value] : environment) line += " " + name + "=" + value;
    std::fprintf(stderr, "%s\n", line.c_str());
}

// `arbrun [options] -- program`: find the library, build the environment, become the program.
int runProgram(const arbrun::Invocation& invocation) {
    std::string library, error;
    if (!arbrun::locatePreloadLibrary(std::getenv("ARBRUN_PRELOAD_LIB"), &library, &error)) {
        return fail(arbrun::kExitUsage, error);
    }
    if (!invocation.config.tracePath.empty() &&
        !arbrun::createTraceFile(invocation.config.tracePath, &error)) {
        return fail(arbrun::kExitUsage, error);
    }
    const arbrun::Environment environment =
        arbrun::programEnvironment(invocation.config, library, std::getenv("LD_PRELOAD"));
    if (invocation.config.verbose) describe(environment, invocation.command[0]);
    const std::string notice = arbrun::nativeNoticeFor(invocation.command[0], std::getenv("PATH"));
    if (!notice.empty()) std::fprintf(stderr, "arbrun: %s\n", notice.c_str());
    std::fflush(nullptr);
    return fail(arbrun::execProgram(environment, invocation.command, &error), error);
}

}  // namespace

// Nothing here but the order of the steps; each can fail with its own exit status.
int main(int argc, char** argv) {
    arbrun::Invocation invocation;
    const arbrun::ParseResult parsed =
        arbrun::parseCommandLine(std::vector<std::string>(argv + 1, argv + argc), &invocation);
    if (parsed.outcome == arbrun::ParseOutcome::done) {
        std::fputs(parsed.text.c_str(), stdout);
        return 0;
    }
    if (parsed.outcome == arbrun::ParseOutcome::usageError) {
        return fail(arbrun::kExitUsage, parsed.text);
    }
    switch (invocation.subcommand) {
        case arbrun::Subcommand::doctor:
            return arbrun::runDoctor(invocation);
        case arbrun::Subcommand::ab:
            return arbrun::runAb(invocation);
        case arbrun::Subcommand::run:
            break;
    }
    return runProgram(invocation);
}
