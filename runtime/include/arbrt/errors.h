// The runtime's one error type.
#pragma once

#include <string>

namespace arbrt {

// Why an operation of the runtime layer failed. Functions that mirror pthread calls return plain
// errno values instead (0, EINVAL, ESRCH, ...), so the preload layer can pass them through
// unchanged.
enum class Errc {
    invalidArgument,      // an option or argument is out of range
    alreadyRunning,       // start() called twice
    notRunning,           // an operation that needs a started runtime
    unsupportedPlatform,  // unknown glibc layout, no way to set %fs, ...
    systemError,          // a system call failed; message says which
};

struct Error {
    Errc code;
    std::string message;  // one line, says what to do where possible
};

}  // namespace arbrt
