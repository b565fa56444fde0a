// Per-thread TLS and libraries loaded at run time.
#pragma once

namespace arbrt {

// Call after dlopen/dlmopen/dlclose: copies the static (initial-exec) TLS image of each newly
// loaded library into every user thread's TCB (glibc initialises it only in threads it knows), and
// updates the images used when pooled TCBs are reused. Cheap when nothing changed.
void refreshStaticTls();

// glibc's malloc gives the process's initial thread its main arena (the brk heap) and every other
// thread an arena of its own; a program's main() run as a user thread would get one too, and grow
// its heap one mprotect per page instead of by brk with padding (src/tls/main_arena.cc).
// findMainArena: on the initial thread, before any user thread exists; false when it cannot tell
// where glibc keeps a thread's arena (or malloc is not glibc's). useMainArena: on a user thread
// that has not allocated yet, makes its malloc use the main arena, and checks it with one
// allocation; false when it could not (the thread then gets an arena of its own, as before).
bool findMainArena();
bool useMainArena();

}  // namespace arbrt
