// The last step: export the configuration and replace arbrun with the program.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "arbconfig/config.h"

namespace arbrun {

// arbrun's own exit statuses, used only before the program starts (shell conventions).
inline constexpr int kExitUsage = 2;            // bad options, no program, no preload library
inline constexpr int kExitCannotExecute = 126;  // found but not executable
inline constexpr int kExitNotFound = 127;       // no such program

// Name=value pairs to set in the program's environment, in order.
using Environment = std::vector<std::pair<std::string, std::string>>;

// The variables a program runs with under arbrun: every ARBRUN_* variable of `config` (all of
// them, so stale values are replaced), then LD_PRELOAD with `library` first and the entries of
// `existingPreload` (may be null) after it.
Environment programEnvironment(const arbconfig::Config& config, const std::string& library,
                               const char* existingPreload);

// --trace: creates (truncates) the file now, so that a path that cannot be written is a usage error
// before the program starts rather than a warning from inside it. False with *error set.
bool createTraceFile(const std::string& path, std::string* error);

// 127 for errors meaning "no such program" (ENOENT, ENOTDIR), 126 for the rest, like a shell.
int exitStatusForExecError(int err);

// Sets every variable in `environment` (replacing existing values) and execvp()s command[0] with
// `command` as its argv, searching PATH when the name has no '/'. Returns only on failure: the
// exit status to use, with *error set to one line ("cannot run 'prog': No such file or
// directory").
int execProgram(const Environment& environment, const std::vector<std::string>& command,
                std::string* error);

}  // namespace arbrun
