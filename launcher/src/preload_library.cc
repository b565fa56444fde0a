// Preload library lookup. The only system calls are readlink(/proc/self/exe) and stat(); the path
// arithmetic is pure and unit-tested.
#include "preload_library.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

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

// A missing or unusable library is the user's to fix (build it, or say where it is), so the
// message says both.
bool checkLibrary(const std::string& path, bool overridden, std::string* error) {
    const char* hint = overridden ? "; check ARBRUN_PRELOAD_LIB"
                                  : "; build it (cmake --build build) or set ARBRUN_PRELOAD_LIB to "
                                    "its path";
    if (path.find_first_of(": ") != std::string::npos) {
        *error = "preload library path '" + path +
                 "' contains ':' or a space, which LD_PRELOAD cannot carry" + hint;
        return false;
    }
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
        *error = "preload library " + path + " not found (" + std::strerror(errno) + ")" + hint;
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        *error = "preload library " + path + " is not a regular file" + hint;
        return false;
    }
    return true;
}

}  // namespace

// The install layout: bin/arbrun beside lib/libarbrun.so (also the build tree's layout).
std::string defaultPreloadPath(std::string_view selfExe) {
    const fs::path exe(selfExe);
    return (exe.parent_path() / ".." / "lib" / "libarbrun.so").lexically_normal().string();
}

// The override exists for tests and unusual installs; checked like the default so the error is
// the same kind either way.
bool locatePreloadLibrary(const char* overridePath, std::string* path, std::string* error) {
    const bool overridden = overridePath && *overridePath;
    std::string candidate;
    if (overridden) {
        std::error_code ec;
        candidate = fs::absolute(overridePath, ec).lexically_normal().string();
        if (ec) candidate = overridePath;
    } else {
        std::string exe;
        if (!readSelfExe(&exe, error)) return false;
        candidate = defaultPreloadPath(exe);
    }
    if (!checkLibrary(candidate, overridden, error)) return false;
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
