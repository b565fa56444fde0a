// Preload library lookup. The only system calls are readlink(/proc/self/exe) and stat(); the path
// arithmetic is pure and unit-tested.
#include "preload_library.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "arbfast/fast_start.h"

namespace arbrun {
namespace {

namespace fs = std::filesystem;

// The executable's real path (symlinks resolved), so a symlinked arbrun still finds its lib/.
bool readSelfExe(std::string* path, std::string* error) {
    std::string buffer(4096, '\0');
    const ssize_t n = readlink("/proc/self/exe", buffer.data(), buffer.size());
    if (n <= 0 || static_cast<size_t>(n) >= buffer.size()) {
        *error = std::string("cannot find arbrun's own path in /proc/self/exe (") +
                 (n < 0 ? std::strerror(errno) : "path too long") +
                 "); set ARBRUN_PRELOAD_LIB to the preload library's path";
        return false;
    }
    buffer.resize(static_cast<size_t>(n));
    *path = std::move(buffer);
    return true;
}

// A missing or unusable library is the user's to fix (build or install it, or say where it is),
// so the message says how. `alsoTried`: the other places looked at, for the not-found message.
bool checkLibrary(const std::string& path, bool overridden, const std::string& alsoTried,
                  std::string* error) {
    const char* hint = overridden ? "; check ARBRUN_PRELOAD_LIB"
                                  : "; build it (cmake --build build), install it (cmake --install "
                                    "build) or set ARBRUN_PRELOAD_LIB to its path";
    if (path.find_first_of(": ") != std::string::npos) {
        *error = "preload library path '" + path +
                 "' contains ':' or a space, which LD_PRELOAD cannot carry" + hint;
        return false;
    }
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
        *error = "preload library " + path + " not found (" + std::strerror(errno) + ")" +
                 (alsoTried.empty() ? "" : ", nor " + alsoTried) + hint;
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        *error = "preload library " + path + " is not a regular file" + hint;
        return false;
    }
    return true;
}

// The first candidate that exists; when none does, the first, so that the error names where an
// installed arbrun expects it (and says it also looked in the build tree's place).
std::string pickCandidate(const std::vector<std::string>& candidates, std::string* alsoTried) {
    for (const std::string& c : candidates) {
        struct stat st;
        if (stat(c.c_str(), &st) == 0) return c;
    }
    for (size_t i = 1; i < candidates.size(); ++i) {
        *alsoTried += (i > 1 ? " or " : "") + candidates[i];
    }
    return candidates.front();
}

// The directory of `selfExe` (an absolute path, as /proc/self/exe gives) joined with `relative`,
// normalised; `relative` itself when that cannot be done (a relative or overlong selfExe), which
// the library check then reports as not found.
std::string joinToExe(std::string_view selfExe, std::string_view relative) {
    const std::string exe(selfExe), rel(relative);
    arbfast::Path joined;
    if (!arbfast::joinRelative(exe.c_str(), rel.c_str(), &joined)) return rel;
    return std::string(joined.text, joined.size);
}

}  // namespace

// The build tree's layout: bin/arbrun beside lib/libarbrun.so. The lexical arithmetic is the fast
// start's (arbfast::joinRelative), so both paths name the same file the same way.
std::string defaultPreloadPath(std::string_view selfExe) {
    return joinToExe(selfExe, arbfast::kBuildTreePreloadRelPath);
}

// Set by the build from the install directories (launcher/CMakeLists.txt), so an installed arbrun
// needs no environment variable.
std::string_view installedPreloadRelPath() {
    return arbfast::installedPreloadRelPath();
}

// Installed first: a build tree has no lib/arbrun/, while an installed prefix's lib/ may hold
// another project's (or an old) libarbrun.so.
std::vector<std::string> preloadCandidates(std::string_view selfExe,
                                           std::string_view installedRelPath) {
    std::vector<std::string> out{joinToExe(selfExe, installedRelPath)};
    std::string build = defaultPreloadPath(selfExe);
    if (build != out.front()) out.push_back(std::move(build));
    return out;
}

// The override exists for tests and unusual installs; checked like the default so the error is
// the same kind either way.
bool locatePreloadLibrary(const char* overridePath, std::string* path, std::string* error) {
    const bool overridden = overridePath && *overridePath;
    std::string candidate;
    std::string alsoTried;
    if (overridden) {
        std::error_code ec;
        candidate = fs::absolute(overridePath, ec).lexically_normal().string();
        if (ec) candidate = overridePath;
    } else {
        std::string exe;
        if (!readSelfExe(&exe, error)) return false;
        candidate = pickCandidate(preloadCandidates(exe, installedPreloadRelPath()), &alsoTried);
    }
    if (!checkLibrary(candidate, overridden, alsoTried, error)) return false;
    *path = std::move(candidate);
    return true;
}

// Ours goes first so its pthread symbols win over any other preloaded library's; the rest keep
// their order because it matters to them too.
std::string prependPreload(std::string_view existing, std::string_view library) {
    std::string out(library);
    while (!existing.empty()) {
        const size_t end = existing.find_first_of(": ");
        const std::string_view entry = existing.substr(0, end);
        existing = end == std::string_view::npos ? std::string_view() : existing.substr(end + 1);
        if (entry.empty() || entry == library) continue;
        out += ':';
        out += entry;
    }
    return out;
}

}  // namespace arbrun
