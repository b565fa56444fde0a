// Finding the preload library and composing LD_PRELOAD.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace arbrun {

// The build tree's layout: ../lib/libarbrun.so relative to the directory holding `selfExe`
// (lexically normalised: /work/build/bin/arbrun -> /work/build/lib/libarbrun.so).
std::string defaultPreloadPath(std::string_view selfExe);

// Where `cmake --install` and the Debian package put the library relative to the installed arbrun's
// directory, fixed when arbrun is built (bindir to the private library directory, e.g.
// ../lib/arbrun/libarbrun.so).
std::string_view installedPreloadRelPath();

// The paths arbrun tries, in order, for an executable at `selfExe`: the installed layout
// (`installedRelPath` from its directory) first, then the build tree's (defaultPreloadPath); one
// entry when both name the same file.
std::vector<std::string> preloadCandidates(std::string_view selfExe,
                                           std::string_view installedRelPath);

// The library to preload: `overridePath` (ARBRUN_PRELOAD_LIB) when non-empty, made absolute so the
// program's children find it after a chdir; otherwise the first of preloadCandidates() of
// /proc/self/exe (symlinks resolved) that exists. False with a one-line *error when it cannot be
// found or cannot go into LD_PRELOAD (which separates entries with ':' and spaces).
bool locatePreloadLibrary(const char* overridePath, std::string* path, std::string* error);

// `library` first, then the entries of `existing` (ld.so splits on ':' and ' ') in their order,
// without empty entries or another copy of `library`, joined with ':'.
std::string prependPreload(std::string_view existing, std::string_view library);

}  // namespace arbrun
