// The text of `arbrun --help` (and of `arbrun doctor --help`, `arbrun ab --help`) that is not
// generated from the options: usage lines, description, examples and the exit-status rule. Kept
// apart from parsing so the two can change separately.
#pragma once

#include <CLI/CLI.hpp>

#include "command_line.h"

namespace arbrun {

// Puts the description, footer and the usage-line formatter of `subcommand` on `app`.
void decorateHelp(CLI::App* app, Subcommand subcommand);

}  // namespace arbrun
