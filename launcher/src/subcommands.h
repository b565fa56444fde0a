// The subcommands' entry points; main() dispatches on Invocation::subcommand. Each returns the
// process's exit status.
#pragma once

#include "command_line.h"

namespace arbrun {

// `arbrun doctor`: the report on stdout; 0 when nothing FAILed, else 1 (doctor_command.cc).
int runDoctor(const Invocation& invocation);

// `arbrun ab`: progress on stderr, the table on stdout; 0 when every run's output matched, 1 when
// one differed, 2 without a preload library, 126/127 when the program cannot be run
// (ab_command.cc).
int runAb(const Invocation& invocation);

}  // namespace arbrun
