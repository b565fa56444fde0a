// Scratch files for a child's output: created and unlinked at once, so nothing is left behind on
// any path out of arbrun (error, signal, crash); only the descriptor keeps them alive.
#pragma once

#include <string>

namespace arbrun {

// An open, already unlinked, read-write file in $TMPDIR (or /tmp); -1 with *error set on failure.
// Close-on-exec: hand it to a child with ChildSpec, which dup2()s it.
int openScratchFile(std::string* error);

// Empties `fd` and rewinds it for the next run.
bool resetScratchFile(int fd, std::string* error);

// The whole contents of `fd` (read with pread, the offset is left alone).
std::string readScratchFile(int fd);

// Whether the two files hold the same bytes.
bool sameContents(int a, int b);

}  // namespace arbrun
