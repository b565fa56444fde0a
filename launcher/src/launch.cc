// exec, so the program's exit status and signals are its own: nothing of arbrun stays behind.
#include "launch.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "preload_library.h"

namespace arbrun {

// Ours first in LD_PRELOAD (its pthread symbols must win), after the configuration, so --verbose
// lists the variables in the order the program reads them.
Environment programEnvironment(const arbconfig::Config& config, const std::string& library,
                               const char* existingPreload) {
    Environment environment = arbconfig::toEnvironment(config);
    environment.emplace_back("LD_PRELOAD",
                             prependPreload(existingPreload ? existingPreload : "", library));
    return environment;
}

// The statuses a shell uses, so scripts that check for 126/127 keep working under arbrun.
int exitStatusForExecError(int err) {
    return err == ENOENT || err == ENOTDIR ? kExitNotFound : kExitCannotExecute;
}

bool createTraceFile(const std::string& path, std::string* error) {
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        *error = "--trace: cannot write '" + path + "': " + std::strerror(errno);
        return false;
    }
    close(fd);
    return true;
}

// setenv then execvp rather than building an envp: execvp's PATH search needs the real environ,
// and arbrun has nothing else to do with its own environment afterwards.
int execProgram(const Environment& environment, const std::vector<std::string>& command,
                std::string* error) {
    for (const auto& [name, value] : environment) {
        if (setenv(name.c_str(), value.c_str(), 1) != 0) {
            *error = "cannot set " + name + " (" + std::strerror(errno) + ")";
            return kExitCannotExecute;
        }
    }
    std::vector<char*> argv;
    argv.reserve(command.size() + 1);
    for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    const int err = errno;
    *error = "cannot run '" + command[0] + "': " + std::strerror(err);
    return exitStatusForExecError(err);
}

}  // namespace arbrun
