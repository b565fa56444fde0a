// Finding the preload library and composing LD_PRELOAD.
#pragma once

#include <string>
#include <string_view>

namespace arbrun {

// ../lib/libarbrun.so relative to the directory holding `selfExe` (lexically normalised:
// /opt/arbrun/bin/arbrun -> /opt/arbrun/lib/libarbrun.so).
std::string defaultPreloadPath(std::string_view selfExe);

// The library to preload: `overridePath` (ARBRUN_PRELOAD_LIB) when non-empty, made absolute so the
// program's children find it after a chdir; otherwise defaultPreloadPath() of /proc/self/exe.
// False with a one-line *error when it cannot be found or cannot go into LD_PRELOAD (which
// separates entries with ':' and spaces).
bool locatePreloadLibrary(const char* overridePath, std::string* path, std::string* error);

// `library` first, then the entries of `existing` (ld.so splits on ':' and ' ') in their order,
// without empty entries or another copy of `library`, joined with ':'.
std::string prependPreload(std::string_view existing, std::string_view library);

}  // namespace arbrun
