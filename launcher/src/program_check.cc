// Resolving and inspecting the program before exec (program_check.h).
#include "program_check.h"

#include "arbfast/fast_start.h"

namespace arbrun {

// The fast start's search (arbfast::findProgram), so both paths run the same file.
std::string resolveProgram(const std::string& name, const char* path) {
    arbfast::Path found;
    if (!arbfast::findProgram(name.c_str(), path, &found)) return "";
    return std::string(found.text, found.size);
}

// The Go wording matches the preload library's line for a dynamically linked Go program.
std::string nativeNotice(const std::string& shown, const arbexe::ElfFacts& facts) {
    if (!facts.elf || facts.dynamic) return "";
    if (facts.go) {
        return shown +
               " is a Go program (its runtime schedules its own threads), statically linked (the "
               "preload library cannot load into it); running it natively";
    }
    return shown +
           " is statically linked (the preload library cannot load into it); running it "
           "natively";
}

// A file that cannot be read says nothing: execvp reports what is wrong with it.
std::string nativeNoticeFor(const std::string& name, const char* path) {
    const std::string file = resolveProgram(name, path);
    arbexe::ElfFacts facts;
    std::string error;
    if (file.empty() || !arbexe::inspectFile(file, &facts, &error)) return "";
    return nativeNotice(name, facts);
}

}  // namespace arbrun
