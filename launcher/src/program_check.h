// What arbrun says before it execs a program the preload library cannot take: a statically
// linked executable never runs the dynamic loader, so LD_PRELOAD does nothing in it and it runs
// natively whatever arbrun is asked. (A dynamically linked Go program loads the library, which
// sees Go's runtime and says so itself: own_runtime.h in the preload library.)
#pragma once

#include <string>

#include "arbexe/elf_facts.h"

namespace arbrun {

// The file execvp() would run for `name`: `name` itself when it contains a '/', else the first
// PATH entry (`path`; null or empty: execvp's default) holding an executable regular file of that
// name. Empty when there is none (execvp then fails and says why).
std::string resolveProgram(const std::string& name, const char* path);

// The line (without "arbrun: " and the newline) for a program shown as `shown` whose ELF is
// `facts`; empty when the preload library will load into it (or it is no ELF64 file: a script's
// interpreter loads the library).
std::string nativeNotice(const std::string& shown, const arbexe::ElfFacts& facts);

// nativeNotice() for command[0] as execvp() will find it; empty when it cannot be read.
std::string nativeNoticeFor(const std::string& name, const char* path);

}  // namespace arbrun
