// Resolving and inspecting the program before exec (program_check.h).
#include "program_check.h"

#include <sys/stat.h>
#include <unistd.h>

#include <string_view>

namespace arbrun {

// glibc's execvp default when PATH is unset.
constexpr const char* kDefaultPath = "/bin:/usr/bin";

// An empty PATH entry means the current directory, as for execvp.
std::string resolveProgram(const std::string& name, const char* path) {
    if (name.empty()) return "";
    if (name.find('/') != std::string::npos) return name;
    std::string_view rest = path && *path ? path : kDefaultPath;
    for (;;) {
        const size_t colon = rest.find(':');
        const std::string_view dir = rest.substr(0, colon);
        const std::string candidate =
            dir.empty() ? name : std::string(dir) + (dir.back() == '/' ? "" : "/") + name;
        struct stat st {};
        if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
            access(candidate.c_str(), X_OK) == 0) {
            return candidate;
        }
        if (colon == std::string_view::npos) return "";
        rest.remove_prefix(colon + 1);
    }
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
