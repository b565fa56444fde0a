// fork(), vfork() and pthread_atfork() under the runtime: the child gets a working runtime.
#pragma once

namespace arbrun {

// Registers the runtime's fork handlers with glibc. Call before anything else can register one
// (the library constructor): glibc runs prepare handlers in reverse order of registration and
// parent/child handlers in order, so the runtime's prepare runs after every other prepare handler
// (which may still block, park and take locks on user threads) and its parent/child hooks before
// any other parent/child handler (which may then create threads and lock mutexes).
void installForkHandlers();

// Cores for the runtime rebuilt in a fork child (startup.cc): the parent's count when standalone;
// one when the parent's cores came from a core arbiter (the child does not inherit the arbiter
// connection and runs standalone, so it keeps a small footprint).
int forkChildCores();

}  // namespace arbrun
