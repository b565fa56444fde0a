// Programs with thread runtimes of their own that cannot run on user threads. Go's runtime
// (gc, dynamically linked with cgo) creates its threads with pthread_create but then schedules
// goroutines on them itself: it gives every thread a signal stack of its own and refuses a
// signal handled anywhere else ("signal 11 received but handler not on signal stack"), keeps
// per-thread state the runtime would move between kernel threads, and makes its own raw
// system calls. Such a process runs natively: the preload library passes every call through.
#pragma once

#include <string>

namespace arbrun {

// Whether this process carries such a runtime; then *why is the sentence naming the program
// and the runtime ("./prog is a Go program (its runtime schedules its own threads)"). Looks at
// the Go build-id note of every object loaded so far (in memory, no system call), then at the
// executable's section headers for .go.buildinfo (a Go binary built without a build id): an
// open and three or four preads of /proc/self/exe. Call once, at start-up.
bool ownThreadRuntime(std::string* why);

// After a dlopen while the runtime runs: if a Go library has been loaded (its runtime starts in
// its constructor and crashes on user threads; too late to run natively), says so once, in one
// line, so the crash that follows is not a mystery. A scan of the loaded objects' notes in
// memory (~0.1 µs per object).
void warnIfGoLibraryLoaded();

}  // namespace arbrun
