// The text of `arbrun --help` that is not generated from the options: usage line, description,
// examples and the exit-status rule. Kept apart from parsing so the two can change separately.
#pragma once

#include <CLI/CLI.hpp>

namespace arbrun {

// Puts the description, footer and the usage-line formatter on `app`.
void decorateHelp(CLI::App* app);

}  // namespace arbrun
