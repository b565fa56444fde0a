// Per-thread TLS and libraries loaded at run time.
#pragma once

namespace arbrt {

// Call after dlopen/dlmopen/dlclose: copies the static (initial-exec) TLS image of each newly
// loaded library into every user thread's TCB (glibc initialises it only in threads it knows), and
// updates the images used when pooled TCBs are reused. Cheap when nothing changed.
void refreshStaticTls();

}  // namespace arbrt
