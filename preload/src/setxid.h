// The set*id family under the runtime (setxid.cc): process-wide credentials as POSIX wants them.
#pragma once

namespace arbrun {

// Puts this library's SIGSETXID handler in front of glibc's (which glibc installs when the process
// makes its first thread). Idempotent and cheap to repeat; call once the runtime's kernel threads
// exist, again in a fork child (the child's first pthread_create may reinstall glibc's), and before
// each set*id call.
void installSetxidHandler();

}  // namespace arbrun
